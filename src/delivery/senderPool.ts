// The delivery hot path's concurrency bound: rows wait in order in a plain array and at most
// `maxInFlight` sends run at once, each started as an earlier one finishes. Plain callbacks and no
// fiber, promise chain or permit per waiting row: thousands of due triggers are array entries.
import type { DeliveryRow } from "../domain/trigger.ts"

/** First-in first-out rows waiting for a sender: an array read from a moving head, compacted as it drains. */
class RowQueue {
  #rows: Array<DeliveryRow> = []
  #head = 0
  get size(): number {
    return this.#rows.length - this.#head
  }
  pushAll(rows: ReadonlyArray<DeliveryRow>): void {
    for (const row of rows) this.#rows.push(row)
  }
  takeAll(): Array<DeliveryRow> {
    const rows = this.#rows.slice(this.#head)
    this.#rows = []
    this.#head = 0
    return rows
  }
  take(): DeliveryRow {
    const row = this.#rows[this.#head]!
    this.#rows[this.#head++] = undefined as unknown as DeliveryRow
    if (this.#head === this.#rows.length) {
      this.#rows = []
      this.#head = 0
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#rows.length) {
      this.#rows = this.#rows.slice(this.#head)
      this.#head = 0
    }
    return row
  }
}

export interface SenderPool {
  /** Queues rows; they are sent in order as senders free up. */
  readonly push: (rows: ReadonlyArray<DeliveryRow>) => void
  /** Sends in flight now. */
  readonly inFlight: () => number
  /** Rows waiting for a sender now. */
  readonly size: () => number
  /** Removes and returns the rows still waiting for a sender (a stopping node gives them back). */
  readonly takeWaiting: () => ReadonlyArray<DeliveryRow>
  /** Resolves once nothing waits and nothing is in flight (at once when that is so already). */
  readonly whenIdle: () => Promise<void>
  /** Starts nothing more (rows still waiting are left to crash recovery). */
  readonly close: () => void
}

export const makeSenderPool = <O>(options: {
  readonly maxInFlight: number
  readonly send: (row: DeliveryRow) => Promise<O>
  readonly onOutcome: (row: DeliveryRow, outcome: O) => void
  /** A send or onOutcome that threw (a bug): reported, and the pool goes on. */
  readonly onCrash: (error: unknown) => void
}): SenderPool => {
  const ready = new RowQueue()
  let inFlight = 0
  let closed = false
  let idleWaiters: Array<() => void> = []
  const settleIdle = (): void => {
    if (inFlight > 0 || ready.size > 0 || idleWaiters.length === 0) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const resolve of waiters) resolve()
  }
  const pump = (): void => {
    while (!closed && inFlight < options.maxInFlight && ready.size > 0) {
      const row = ready.take()
      inFlight++
      options.send(row).then((outcome) => {
        inFlight--
        options.onOutcome(row, outcome)
        pump()
      }).catch((error: unknown) => {
        inFlight--
        options.onCrash(error)
        pump()
      })
    }
    settleIdle()
  }
  return {
    push: (rows) => {
      ready.pushAll(rows)
      pump()
    },
    inFlight: () => inFlight,
    size: () => ready.size,
    takeWaiting: () => {
      const rows = ready.takeAll()
      settleIdle()
      return rows
    },
    whenIdle: () =>
      new Promise<void>((resolve) => {
        idleWaiters.push(resolve)
        settleIdle()
      }),
    close: () => {
      closed = true
    }
  }
}
