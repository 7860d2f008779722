// Rows handed to delivery ahead of their time (a shard fires a little ahead: scheduler/shardActor.ts),
// waiting for it: grouped by due millisecond, the earliest first. Pure: the dispatcher releases what
// is due from one loop, instead of a fiber and a timer for every due time.

export class DueQueue<T extends { readonly dueAtMs: number }> {
  /** Rows by due millisecond. */
  readonly #byTime = new Map<number, Array<T>>()
  /** The due milliseconds, ascending. */
  readonly #times: Array<number> = []
  #size = 0

  get size(): number {
    return this.#size
  }

  /** The earliest due time waiting, if any. */
  nextAtMs(): number | undefined {
    return this.#times[0]
  }

  /** The earliest due time waiting at or after `atMs`, if any. */
  firstAtOrAfter(atMs: number): number | undefined {
    return this.#times[this.#insertionIndex(atMs)]
  }

  add(rows: ReadonlyArray<T>): void {
    for (const row of rows) {
      const group = this.#byTime.get(row.dueAtMs)
      if (group !== undefined) group.push(row)
      else {
        this.#byTime.set(row.dueAtMs, [row])
        this.#times.splice(this.#insertionIndex(row.dueAtMs), 0, row.dueAtMs)
      }
    }
    this.#size += rows.length
  }

  /** Removes and returns the rows due at or before `nowMs`, earliest first. */
  takeDue(nowMs: number): Array<T> {
    let n = 0
    while (n < this.#times.length && this.#times[n]! <= nowMs) n++
    if (n === 0) return []
    const due: Array<T> = []
    for (const at of this.#times.splice(0, n)) {
      for (const row of this.#byTime.get(at)!) due.push(row)
      this.#byTime.delete(at)
    }
    this.#size -= due.length
    return due
  }

  /** Removes and returns every row (a stopping node gives them back). */
  takeAll(): Array<T> {
    return this.takeDue(Infinity)
  }

  /** Where `atMs` goes in the ascending times (binary search: times arrive mostly in order). */
  #insertionIndex(atMs: number): number {
    let low = 0
    let high = this.#times.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.#times[middle]! < atMs) low = middle + 1
      else high = middle
    }
    return low
  }
}
