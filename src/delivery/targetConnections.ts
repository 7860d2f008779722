// The delivery connections: one undici Client per connection, grouped by origin, one exchange at a
// time on each. A free connection of the origin is taken (the last freed first: busy ones stay warm,
// the rest reach their keep-alive timeout), else a new one up to `connections` per origin, else the
// origin's connection with the fewest exchanges queues it. Undici's Agent and Pool would do the
// same with a lookup, a scan of the pool's clients and three 'drain' events per request: this is
// the delivery hot path (docs/internals.md, "The delivery engine"). A connection that closes while
// free is dropped, and an origin with none left is forgotten.
import { Client, errors } from "undici"
import type { Dispatcher } from "undici"

export interface TargetConnections {
  /**
   * Sends one exchange to `opts.origin`; `release` is for the caller to call once, when the exchange
   * has ended (its handler's last callback): the connection takes the next exchange. Never throws:
   * a refused exchange ends with `handler.onResponseError`.
   */
  readonly dispatch: (opts: Dispatcher.DispatchOptions & { readonly origin: string }, handler: Dispatcher.DispatchHandler) => Connection | null
  /** Connections open now, over every origin. */
  readonly size: () => number
  /** Waits for the exchanges under way, then closes every connection; later dispatches are refused. */
  readonly close: () => Promise<void>
  /** Closes every connection at once; exchanges still under way end with an error. */
  readonly destroy: () => Promise<void>
}

/** One connection of an origin: its undici Client and the exchanges given to it not yet ended. */
export interface Connection {
  /** The exchange given to this connection has ended (call once per dispatch). */
  readonly release: () => void
}

interface Origin {
  readonly name: string
  /** Connections with no exchange, the last freed at the end. */
  readonly free: Array<Slot>
  readonly all: Array<Slot>
}

const noop = () => {}

class Slot implements Connection {
  readonly client: Client
  readonly origin: Origin
  /** Exchanges given to this connection and not yet released. */
  exchanges = 0
  /** A socket is open (set on connect, cleared on disconnect or a failed connect). */
  connected = false
  readonly #pool: Pool
  constructor(pool: Pool, origin: Origin, client: Client) {
    this.#pool = pool
    this.origin = origin
    this.client = client
  }
  release(): void {
    this.#pool.released(this)
  }
}

class Pool implements TargetConnections {
  readonly #origins = new Map<string, Origin>()
  readonly #options: Client.Options
  readonly #connections: number
  #open = 0
  #closed = false

  constructor(options: Client.Options & { readonly connections: number }) {
    const { connections, ...clientOptions } = options
    this.#options = clientOptions
    this.#connections = connections
  }

  readonly dispatch = (opts: Dispatcher.DispatchOptions & { readonly origin: string }, handler: Dispatcher.DispatchHandler): Connection | null => {
    if (this.#closed) {
      handler.onResponseError?.(null as unknown as Dispatcher.DispatchController, new errors.ClientClosedError())
      return null
    }
    let slot: Slot
    try {
      slot = this.#slotFor(opts.origin)
    } catch (err) {
      handler.onResponseError?.(null as unknown as Dispatcher.DispatchController, err as Error)
      return null
    }
    slot.exchanges++
    slot.client.dispatch(opts, handler) // a refusal is reported to the handler (onResponseError), not thrown
    return slot
  }

  readonly size = (): number => this.#open

  readonly close = async (): Promise<void> => {
    this.#closed = true
    await Promise.all(this.#slots().map((slot) => slot.client.close().catch(noop)))
  }

  readonly destroy = async (): Promise<void> => {
    this.#closed = true
    const slots = this.#slots()
    this.#origins.clear()
    await Promise.all(slots.map((slot) => slot.client.destroy().catch(noop)))
  }

  released(slot: Slot): void {
    if (--slot.exchanges > 0) return
    if (!slot.connected || this.#closed) this.#drop(slot)
    else slot.origin.free.push(slot)
  }

  #slots(): Array<Slot> {
    const slots: Array<Slot> = []
    for (const origin of this.#origins.values()) slots.push(...origin.all)
    return slots
  }

  #slotFor(name: string): Slot {
    let origin = this.#origins.get(name)
    if (origin === undefined) {
      origin = { name, free: [], all: [] }
      this.#origins.set(name, origin)
    }
    const free = origin.free.pop()
    if (free !== undefined) return free
    if (origin.all.length < this.#connections) return this.#connect(origin)
    // every connection of the origin busy: queue on the one with the fewest exchanges
    let least = origin.all[0]!
    for (const slot of origin.all) if (slot.exchanges < least.exchanges) least = slot
    return least
  }

  #connect(origin: Origin): Slot {
    const client = new Client(origin.name, this.#options)
    const slot = new Slot(this, origin, client)
    const gone = () => {
      slot.connected = false
      if (slot.exchanges === 0) this.#drop(slot) // free and closed: nothing to keep it for
    }
    client.on("connect", () => {
      slot.connected = true
    })
    client.on("disconnect", gone)
    client.on("connectionError", gone)
    origin.all.push(slot)
    this.#open++
    return slot
  }

  /** Forgets a connection with no exchange and closes its client; an origin left with none is forgotten too. */
  #drop(slot: Slot): void {
    const { origin } = slot
    const at = origin.all.indexOf(slot)
    if (at === -1) return
    origin.all.splice(at, 1)
    const freeAt = origin.free.indexOf(slot)
    if (freeAt !== -1) origin.free.splice(freeAt, 1)
    this.#open--
    if (origin.all.length === 0 && this.#origins.get(origin.name) === origin) this.#origins.delete(origin.name)
    slot.client.close().catch(noop)
  }
}

/** The connections of deliveries; `options` are each connection's (undici Client options). */
export const makeTargetConnections = (options: Client.Options & { readonly connections: number }): TargetConnections =>
  new Pool(options)
