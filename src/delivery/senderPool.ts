// The delivery hot path's concurrency bound: rows wait in order in a plain array and at most
// `maxInFlight` sends run at once, each started as an earlier one finishes. Plain callbacks and no
// fiber, promise or permit per row, waiting or in flight: thousands of due triggers are array
// entries, and a send reports its outcome through a callback (docs/internals.md, "The delivery engine").

/** First-in first-out rows waiting for a sender: an array read from a moving head, compacted as it drains. */
class RowQueue<T> {
  #rows: Array<T> = []
  #head = 0
  get size(): number {
    return this.#rows.length - this.#head
  }
  pushAll(rows: ReadonlyArray<T>): void {
    for (const row of rows) this.#rows.push(row)
  }
  takeAll(): Array<T> {
    const rows = this.#rows.slice(this.#head)
    this.#rows = []
    this.#head = 0
    return rows
  }
  take(): T {
    const row = this.#rows[this.#head]!
    this.#rows[this.#head++] = undefined as unknown as T
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

export interface SenderPool<T> {
  /** Queues rows; they are sent in order as senders free up. */
  readonly push: (rows: ReadonlyArray<T>) => void
  /** Sends in flight now. */
  readonly inFlight: () => number
  /** Rows waiting for a sender now. */
  readonly size: () => number
  /** Removes and returns the rows still waiting for a sender (a stopping node gives them back). */
  readonly takeWaiting: () => ReadonlyArray<T>
  /** Resolves once nothing waits and nothing is in flight (at once when that is so already). */
  readonly whenIdle: () => Promise<void>
  /** Resolves once fewer than `limit` rows wait, here and `besides` (at once when that is so already). */
  readonly whenBelow: (limit: number) => Promise<void>
  /** Rows waiting besides this pool's went down: waiters of `whenBelow` look again. */
  readonly recheck: () => void
  /** Starts nothing more (rows still waiting are left to crash recovery). */
  readonly close: () => void
}

export const makeSenderPool = <T, O>(options: {
  readonly maxInFlight: number
  /** Starts sending `row`; calls `done` once with its outcome, later or at once. */
  readonly send: (row: T, done: (outcome: O) => void) => void
  readonly onOutcome: (row: T, outcome: O) => void
  /** A send or onOutcome that threw (a bug): reported, and the pool goes on (the row's sender is freed). */
  readonly onCrash: (error: unknown) => void
  /** Rows waiting elsewhere for this pool (the tag gates'), counted by `whenBelow`. */
  readonly besides?: () => number
}): SenderPool<T> => {
  const ready = new RowQueue<T>()
  let inFlight = 0
  let closed = false
  let idleWaiters: Array<() => void> = []
  let roomWaiters: Array<{ readonly limit: number; readonly resolve: () => void }> = []
  /** The highest limit among `roomWaiters`: while the backlog is at or above it, none of them is due. */
  let highestLimit = -Infinity
  const besides = options.besides ?? (() => 0)
  const settleIdle = (): void => {
    // called after every send's outcome: a look at the waiters only once one of them is due
    if (roomWaiters.length > 0 && ready.size + besides() < highestLimit) {
      const backlog = ready.size + besides()
      const waiting = roomWaiters
      roomWaiters = waiting.filter((waiter) => backlog >= waiter.limit)
      highestLimit = Math.max(-Infinity, ...roomWaiters.map((waiter) => waiter.limit))
      for (const waiter of waiting) if (backlog < waiter.limit) waiter.resolve()
    }
    if (inFlight > 0 || ready.size > 0 || idleWaiters.length === 0) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const resolve of waiters) resolve()
  }
  /** Starts one row's send; its callback frees the sender once and reports the outcome. */
  const start = (row: T): void => {
    let finished = false
    inFlight++
    try {
      options.send(row, (outcome) => {
        if (finished) return
        finished = true
        inFlight--
        try {
          options.onOutcome(row, outcome)
        } catch (error) {
          options.onCrash(error)
        }
        pump()
      })
    } catch (error) {
      if (!finished) {
        finished = true
        inFlight--
      }
      options.onCrash(error)
    }
  }
  let pumping = false
  const pump = (): void => {
    if (pumping) return // a send that finished at once: the running loop goes on
    pumping = true
    try {
      while (!closed && inFlight < options.maxInFlight && ready.size > 0) {
        start(ready.take())
      }
    } finally {
      pumping = false
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
    whenBelow: (limit) =>
      ready.size + besides() < limit ? Promise.resolve() : new Promise<void>((resolve) => {
        roomWaiters.push({ limit, resolve })
        if (limit > highestLimit) highestLimit = limit
      }),
    recheck: settleIdle,
    close: () => {
      closed = true
    }
  }
}
