// The gates of one node in memory (docs/tag-policies.md "How the limits hold across nodes"): the
// triggers waiting at each gate in arrival order, the gate's book (domain/gates/gateBook.ts: leased permits
// and window tokens, the hold), and the starts in flight (tickets). Admission is a plain function call
// on the delivery hot path: a trigger starts when every gate it carries admits it; one blocked by a
// gate does not hold back the triggers behind it that do not carry that gate. What waits too long, or
// at a paused or held gate, is handed out to be released to PostgreSQL (store/gates.ts), and what waits
// there is taken back when the gate has room. No I/O, no clock: gatekeeper.ts drives it.
import type { GateRef } from "../cluster/wakeups.ts"
import { GateBook } from "../domain/gates/gateBook.ts"
import type { HoldState } from "../domain/gates/gateHold.ts"
import type { DeliveryRow } from "../domain/trigger.ts"

/** A trigger waiting at its gates. */
export interface Waiter<I> {
  readonly item: I
  readonly row: DeliveryRow
  readonly gates: ReadonlyArray<NodeGate<I>>
  readonly sinceMs: number
  /** Taken from PostgreSQL (queued, claimed by this node); else fired or claimed straight to memory. */
  readonly taken: boolean
  done: boolean
}

/** A start in flight: its gates, when it was admitted, when its request was written (null: not yet). */
export interface Ticket<I> {
  readonly gates: ReadonlyArray<NodeGate<I>>
  /** The gates whose circuit this start probes (docs/protecting-targets.md "Circuit breaker"). */
  readonly probes: ReadonlyArray<NodeGate<I>>
  readonly admittedAtMs: number
  writtenAtMs: number | null
}

/** How long a trigger waits in memory at most before it is released to wait in PostgreSQL (reading `queued`). */
export const RELEASE_AFTER_MS = 500
/** At most this many seconds of a gate's admissions wait in memory; more are released at once. */
const MEMORY_SECONDS = 0.5
/** The time constant of a gate's measured admission rate. */
const RATE_TAU_MS = 500
/** The first attempts' duration assumed before any is measured (an optimistic guess: released rows come back). */
const FIRST_ATTEMPT_MS = 10
/** How far down a gate's queue admission looks past a head blocked by another gate. */
const SCAN_DEPTH = 64

/** Waiters in arrival order, read from a moving head; done ones are skipped (and dropped at the head). */
class WaiterQueue<I> {
  #items: Array<Waiter<I>> = []
  #head = 0
  push(waiter: Waiter<I>): void {
    this.#items.push(waiter)
  }
  #compact(): void {
    while (this.#head < this.#items.length && this.#items[this.#head]!.done) this.#head++
    if (this.#head === this.#items.length) {
      this.#items = []
      this.#head = 0
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
  }
  /** The first `depth` waiters not done, oldest first. */
  *front(depth: number): Generator<Waiter<I>> {
    this.#compact()
    let seen = 0
    for (let i = this.#head; i < this.#items.length && seen < depth; i++) {
      const waiter = this.#items[i]!
      if (waiter.done) continue
      seen++
      yield waiter
    }
  }
  /** The oldest waiter not done, if any. */
  first(): Waiter<I> | undefined {
    this.#compact()
    return this.#items[this.#head]
  }
  /**
   * Visits the waiters not done, oldest first, with their rank among them (those `visit` marks done
   * keep theirs), until `visit` returns false.
   */
  visit(visit: (waiter: Waiter<I>, rank: number) => boolean): void {
    this.#compact()
    let rank = 0
    for (let i = this.#head; i < this.#items.length; i++) {
      const waiter = this.#items[i]!
      if (waiter.done) continue
      if (!visit(waiter, rank++)) return
    }
  }
}

export class NodeGate<I> {
  readonly key: string
  readonly ref: GateRef
  /** Null until the first lease round read the gate's policy. */
  book: GateBook | null = null
  /** When a lease round first read the gate (its policy, or that it has none); null: not yet. */
  readyAtMs: number | null = null
  /** The tag has no policy (any more): it holds nothing back. */
  open = false
  readonly queue = new WaiterQueue<I>()
  /** Waiters not done. */
  waiting = 0
  /** Triggers waiting for this gate in PostgreSQL, claimed by no node (as last read or released). */
  backlog = 0
  /** When this gate's next lease round is due (this node's clock). */
  roundAtMs = -Infinity
  /** The policy version the last round read. */
  policySeenMs: number | null = null
  /** The tag's hold as stored (database clock), for the backoff of the next refusal. */
  hold: HoldState | null = null
  /** This node wrote a lease row for the gate (a round that finds it missing lost its lease). */
  rowWritten = false
  /** A take from PostgreSQL is under way. */
  taking = false
  /** Moving average of the attempts' duration, from admission to outcome. */
  attemptMs = FIRST_ATTEMPT_MS
  /** Admissions per ms, decaying with RATE_TAU_MS, as of `#rateAtMs`; and when this gate first admitted. */
  #rate = 0
  #rateAtMs = -Infinity
  #firstAdmittedMs: number | null = null

  constructor(ref: GateRef) {
    this.ref = ref
    this.key = gateKey(ref)
  }

  /** Whether a start of this gate may happen now (an open gate always). */
  admits(nowMs: number): boolean {
    return this.open || (this.book !== null && this.book.admits(nowMs))
  }

  /** Paused, held, or its circuit open: nothing starts, what waits goes to PostgreSQL. */
  stopped(nowMs: number): boolean {
    return !this.open && this.book !== null && this.book.stopped(nowMs)
  }

  /** One admission at `nowMs`, for the measured rate. */
  admitted(nowMs: number): void {
    this.#rate = this.rateAt(nowMs) + 1 / RATE_TAU_MS
    this.#rateAtMs = nowMs
    this.#firstAdmittedMs ??= nowMs
  }

  /** Admissions per ms lately (an exponentially decaying average). */
  rateAt(nowMs: number): number {
    return this.#rate * Math.exp(-(nowMs - this.#rateAtMs) / RATE_TAU_MS)
  }

  /** About how many starts a second this gate admits: the more of what it measured and what its holding allows. */
  startsPerSecond(nowMs: number): number {
    const estimate = this.book?.startsPerSecond(this.attemptMs) ?? Infinity
    return Math.max(this.rateAt(nowMs) * 1000, estimate)
  }

  /**
   * How many may wait in memory: about MEMORY_SECONDS of admissions, and at least twice what a take
   * brings (all of them until the gate has admitted for a while, or while no round has read its
   * policy).
   */
  memoryCap(nowMs: number): number {
    if (this.open || this.book === null) return Infinity
    if (this.book.limits.paused) return 0
    if (this.#firstAdmittedMs === null || nowMs - this.#firstAdmittedMs < RATE_TAU_MS) return Infinity
    return Math.max(Math.ceil(this.startsPerSecond(nowMs) * MEMORY_SECONDS), 2 * this.lowWater(nowMs))
  }

  /**
   * How many to keep in memory when taking from PostgreSQL (a take takes up to twice as many): a
   * quarter of a second of admissions (a take's round trip, several times over), at least 16.
   */
  lowWater(nowMs: number): number {
    if (this.open || this.book === null) return 1_000
    return Math.max(16, Math.min(1_000, Math.ceil(this.startsPerSecond(nowMs) * 0.25)))
  }

  /**
   * Nothing waits, nothing is in flight, nothing is held or leased, and its circuit has nothing on its
   * way to the shared state (domain/gates/circuitGate.ts `quiet`): the gate can be forgotten.
   */
  idle(nowMs: number): boolean {
    if (this.waiting > 0 || this.backlog > 0 || this.taking) return false
    if (this.book === null) return true
    const holding = this.book.holding()
    return this.book.inUse === 0 && holding.permits === 0 && Object.values(holding.tokens).every((n) => n === 0) && !this.book.held(nowMs) &&
      (this.book.circuit === null || this.book.circuit.quiet())
  }
}

/**
 * When a waiter is released for its age: RELEASE_AFTER_MS after it came, or after its last gate's
 * first lease round if that was later; null while a gate of it has had no round yet (it waits for
 * the gate's budget, not at a gate that has none: released then, it would come back a take at a time).
 */
const releaseDueMs = <I>(waiter: Waiter<I>): number | null => {
  let fromMs = waiter.sinceMs
  for (const gate of waiter.gates) {
    if (gate.readyAtMs === null) return null
    fromMs = Math.max(fromMs, gate.readyAtMs)
  }
  return fromMs + RELEASE_AFTER_MS
}

export const gateKey = (ref: GateRef): string => `${ref.projectId}/${ref.tag}`

export class NodeGates<I> {
  readonly gates = new Map<string, NodeGate<I>>()
  /** The gates with triggers waiting in memory: admission looks at these only. */
  readonly #waitingGates = new Set<NodeGate<I>>()
  readonly #tickets = new Map<string, Ticket<I>>()
  /** Waiters not done, over every gate (each counted once). */
  waitingTotal = 0
  /** A stopping node admits nothing more. */
  closed = false
  /**
   * At most this many starts admitted and not finished (the node's senders): a start beyond what the
   * senders can take now would hold its permit while it waits for one, not at its target.
   */
  maxStarts = Infinity

  /** The gate of `ref`, made when first met (its round then due at once). */
  gate(ref: GateRef): NodeGate<I> {
    const key = gateKey(ref)
    let gate = this.gates.get(key)
    if (gate === undefined) {
      gate = new NodeGate<I>(ref)
      this.gates.set(key, gate)
    }
    return gate
  }

  /** Triggers to admit when their gates allow (each row's `gateTags` names its gates). */
  offer(entries: ReadonlyArray<{ readonly item: I; readonly row: DeliveryRow }>, taken: boolean, nowMs: number): void {
    for (const { item, row } of entries) {
      const gates = row.gateTags.map((tag) => this.gate({ projectId: row.projectId, tag }))
      const waiter: Waiter<I> = { item, row, gates, sinceMs: nowMs, taken, done: false }
      for (const gate of gates) {
        gate.queue.push(waiter)
        if (gate.waiting++ === 0) this.#waitingGates.add(gate)
      }
      this.waitingTotal++
    }
  }

  #finish(waiter: Waiter<I>): void {
    waiter.done = true
    for (const gate of waiter.gates) if (--gate.waiting === 0) this.#waitingGates.delete(gate)
    this.waitingTotal--
  }

  /**
   * Starts what the gates admit now, oldest first per gate; each holds a ticket until `finished`. The
   * gates take turns, one start each a turn: the starts leave in about the order their triggers came,
   * many origins' mixed, rather than a whole gate's budget at once (which would open as many
   * connections to its origin as it has permits). At most `maxStarts` tickets at once: the rest wait
   * here, holding no permit, and a gate that started goes to the end of the turns (the next free
   * sender goes to the gates that did not start last).
   */
  admit(nowMs: number): Array<Waiter<I>> {
    const admitted: Array<Waiter<I>> = []
    if (this.closed) return admitted
    // the first turn walks the set itself (no copy: a node admits a start or two per outcome, and the
    // set may hold a thousand gates); the gates that started move to its end once the turn is over
    let turn: Iterable<NodeGate<I>> = this.#waitingGates
    for (;;) {
      const started: Array<NodeGate<I>> = []
      let full = false
      for (const gate of turn) {
        if (this.#tickets.size >= this.maxStarts) {
          full = true
          break
        }
        if (gate.waiting === 0 || !gate.admits(nowMs)) continue
        const waiter = this.#eligible(gate, nowMs)
        if (waiter === undefined) continue
        this.#start(waiter, nowMs)
        admitted.push(waiter)
        started.push(gate)
      }
      for (const gate of started) if (gate.waiting > 0 && this.#waitingGates.delete(gate)) this.#waitingGates.add(gate)
      if (full || started.length === 0) return admitted
      turn = started
    }
  }

  /** The oldest waiter of `gate` (within SCAN_DEPTH) whose other gates admit it too. */
  #eligible(gate: NodeGate<I>, nowMs: number): Waiter<I> | undefined {
    for (const waiter of gate.queue.front(SCAN_DEPTH)) {
      if (waiter.gates.every((other) => other === gate || other.admits(nowMs))) return waiter
    }
    return undefined
  }

  #start(waiter: Waiter<I>, nowMs: number): void {
    this.#finish(waiter)
    const probes: Array<NodeGate<I>> = []
    for (const other of waiter.gates) {
      if (other.book?.circuit?.take(nowMs) === true) probes.push(other)
      other.book?.take()
      other.admitted(nowMs)
    }
    this.#tickets.set(waiter.row.id, { gates: waiter.gates, probes, admittedAtMs: nowMs, writtenAtMs: null })
  }

  /** The request of a started trigger was written to its connection. */
  written(triggerId: string, nowMs: number): void {
    const ticket = this.#tickets.get(triggerId)
    if (ticket === undefined || ticket.writtenAtMs !== null) return
    ticket.writtenAtMs = nowMs
    for (const gate of ticket.gates) gate.book?.written(nowMs)
  }

  /** A started trigger's attempt ended: its permits come back; returns its ticket (gone: not gated here). */
  finished(triggerId: string, nowMs: number): Ticket<I> | undefined {
    const ticket = this.#tickets.get(triggerId)
    if (ticket === undefined) return undefined
    this.#tickets.delete(triggerId)
    for (const gate of ticket.gates) {
      gate.book?.finished(ticket.writtenAtMs !== null, ticket.admittedAtMs)
      gate.attemptMs += (Math.max(1, nowMs - ticket.admittedAtMs) - gate.attemptMs) / 8
    }
    return ticket
  }

  /**
   * The waiters to release to PostgreSQL now (each is done here): all of a paused or held gate's,
   * and of the others those waiting longer than RELEASE_AFTER_MS or beyond what the gate admits in
   * MEMORY_SECONDS (the newest). Taken ones wait in PostgreSQL already (`queued`): they stay unless
   * their gate stopped. One whose gates all admit it while the node's senders are all taken
   * (`maxStarts`) waits for a sender, not for its gates: it is not released for its age. A stopping
   * node releases everything.
   */
  releasable(nowMs: number): Array<Waiter<I>> {
    const out: Array<Waiter<I>> = []
    const sendersFull = this.#tickets.size >= this.maxStarts
    const release = (waiter: Waiter<I>) => {
      this.#finish(waiter)
      out.push(waiter)
    }
    for (const gate of this.gates.values()) {
      if (gate.waiting === 0) continue
      if (this.closed || gate.stopped(nowMs)) {
        gate.queue.visit((waiter) => (release(waiter), true))
        continue
      }
      const cap = gate.memoryCap(nowMs)
      const overCap = gate.waiting > cap
      gate.queue.visit((waiter, rank) => {
        // waiters come in order (each from when it came): once one is too young to be due, so are
        // the rest, and only those beyond the cap are left to look at
        const young = waiter.sinceMs + RELEASE_AFTER_MS > nowMs
        if (young && !overCap) return false
        if (waiter.taken) return true
        if (rank >= cap) release(waiter)
        else if (!young) {
          const dueMs = releaseDueMs(waiter)
          if (dueMs !== null && nowMs >= dueMs && !(sendersFull && waiter.gates.every((other) => other.admits(nowMs)))) release(waiter)
        }
        return true
      })
    }
    return out
  }

  /** Waiters a release did not take (their trigger changed meanwhile): they wait again, from now. */
  requeue(waiters: ReadonlyArray<Waiter<I>>, nowMs: number): void {
    for (const taken of [true, false]) {
      this.offer(waiters.filter((waiter) => waiter.taken === taken).map((waiter) => ({ item: waiter.item, row: waiter.row })), taken, nowMs)
    }
  }

  /** The gates to take triggers from PostgreSQL into memory now, with how many. */
  takes(nowMs: number): Array<{ readonly gate: NodeGate<I>; readonly limit: number }> {
    if (this.closed) return []
    const out: Array<{ gate: NodeGate<I>; limit: number }> = []
    for (const gate of this.gates.values()) {
      if (gate.backlog === 0 || gate.taking || gate.stopped(nowMs) || (gate.book === null && !gate.open)) continue
      const lowWater = gate.lowWater(nowMs)
      if (gate.waiting >= lowWater) continue
      if (!gate.open && gate.book!.leased && nowMs >= gate.book!.leaseUntilMs) continue
      out.push({ gate, limit: 2 * lowWater - gate.waiting })
    }
    return out
  }

  /** The earliest time something may change by itself: a token comes free, a hold or a cooldown ends, a waiter is due for release. */
  nextWakeMs(nowMs: number): number | null {
    let next: number | null = null
    const at = (ms: number | null) => {
      if (ms !== null && ms > nowMs) next = next === null ? ms : Math.min(next, ms)
    }
    for (const gate of this.gates.values()) {
      if (gate.book !== null) {
        if (gate.book.held(nowMs)) at(gate.book.heldUntilMs)
        if (gate.book.circuit !== null) at(gate.book.circuit.openUntilMs())
        if (gate.waiting > 0) at(gate.book.nextTokenAtMs(nowMs))
      }
      if (gate.waiting > 0) {
        const first = gate.queue.first()
        if (first !== undefined && !first.taken) at(releaseDueMs(first))
      }
    }
    return next
  }

  /** Starts in flight now (tickets held). */
  inFlight(): number {
    return this.#tickets.size
  }
}
