// Pure hierarchical timing wheel (Kafka TimingWheel style) for one shard's near future.
// Level k has `slots` buckets of tick slots^k ms (defaults: 4 × 64 → 1 ms, 64 ms, 4.1 s, 4.4 min).
// An item sits at the lowest level whose window [current tick, current tick + slots) holds its
// fire time; when time passes a bucket's start the bucket is flushed: due items fire, the others
// cascade to lower levels. Beyond the top level an overflow list keeps items safe until they fit
// (the caller keeps only [now, now + horizonMs) here; Postgres is the real overflow wheel).
// add / cancel are O(1) (id → node, swap-remove bucket arrays, node free list); advance visits at
// most `slots` buckets per level; nextDeadlineMs is exact to the millisecond and cached.
// Time is whole milliseconds (fractions are truncated) and never moves backwards.

export interface TimerWheelOptions {
  /** Wheel time at creation (epoch ms). */
  readonly nowMs: number
  /** Slots per level as a power of two (default 6 → 64 slots). */
  readonly slotBits?: number
  /** Number of levels (default 4). */
  readonly levels?: number
}

/** Bucket of items due at or before the wheel time (added in the past): fired by the next advance. */
const DUE = 0

export class TimerWheel {
  readonly slots: number
  readonly levels: number
  /** Items fire within the wheel when fireAtMs < nowMs + horizonMs; later ones wait in the overflow list. */
  readonly horizonMs: number

  #now: number
  readonly #ticks: Array<number>
  readonly #overflow: number

  // Buckets: 0 = due, 1 + level * slots + slot = a wheel slot, last = overflow.
  readonly #buckets: Array<Array<number>>
  readonly #bucketMin: Array<number>
  readonly #bucketMinValid: Array<boolean>
  readonly #levelCount: Array<number>

  // Nodes as parallel arrays, recycled through a free list.
  readonly #index = new Map<string, number>()
  readonly #nodeId: Array<string | undefined> = []
  readonly #nodeFire: Array<number> = []
  readonly #nodeSeq: Array<number> = []
  readonly #nodeBucket: Array<number> = []
  readonly #nodePos: Array<number> = []
  readonly #free: Array<number> = []
  #seq = 0
  #cachedDeadline: number | undefined = undefined
  #cacheValid = true

  constructor(options: TimerWheelOptions) {
    const slotBits = options.slotBits ?? 6
    this.levels = options.levels ?? 4
    if (!Number.isInteger(slotBits) || slotBits < 1 || slotBits > 16) throw new RangeError("slotBits must be 1..16")
    if (!Number.isInteger(this.levels) || this.levels < 1 || this.levels > 8) throw new RangeError("levels must be 1..8")
    this.slots = 2 ** slotBits
    this.#ticks = Array.from({ length: this.levels }, (_, k) => this.slots ** k)
    this.horizonMs = (this.slots - 1) * this.#ticks[this.levels - 1]!
    this.#overflow = 1 + this.levels * this.slots
    const bucketCount = this.#overflow + 1
    this.#buckets = Array.from({ length: bucketCount }, () => [])
    this.#bucketMin = new Array<number>(bucketCount).fill(Infinity)
    this.#bucketMinValid = new Array<boolean>(bucketCount).fill(true)
    this.#levelCount = new Array<number>(this.levels).fill(0)
    this.#now = Math.floor(checkTime(options.nowMs))
  }

  /** Wheel time: the latest `nowMs` given to the constructor or to advance. */
  get nowMs(): number {
    return this.#now
  }

  get size(): number {
    return this.#index.size
  }

  /** Items beyond the top level (added further than horizonMs ahead). */
  get overflowSize(): number {
    return this.#buckets[this.#overflow]!.length
  }

  has(id: string): boolean {
    return this.#index.has(id)
  }

  /** Fire time of a pending id. */
  fireAtMs(id: string): number | undefined {
    const node = this.#index.get(id)
    return node === undefined ? undefined : this.#nodeFire[node]
  }

  /** Schedules `id` at `fireAtMs`; re-adding an id moves it (and orders it as newly inserted). */
  add(id: string, fireAtMs: number): void {
    const fire = Math.floor(checkTime(fireAtMs))
    let node = this.#index.get(id)
    if (node === undefined) {
      node = this.#free.pop() ?? this.#nodeId.length
      this.#index.set(id, node)
      this.#nodeId[node] = id
    } else {
      this.#unlink(node)
    }
    this.#nodeFire[node] = fire
    this.#nodeSeq[node] = this.#seq++
    this.#place(node)
    if (this.#cacheValid && (this.#cachedDeadline === undefined || fire < this.#cachedDeadline)) {
      this.#cachedDeadline = fire
    }
  }

  /** Removes `id`; false when it was not pending. */
  cancel(id: string): boolean {
    const node = this.#index.get(id)
    if (node === undefined) return false
    this.#unlink(node)
    this.#release(node)
    return true
  }

  clear(): void {
    for (const bucket of this.#buckets) bucket.length = 0
    this.#bucketMin.fill(Infinity)
    this.#bucketMinValid.fill(true)
    this.#levelCount.fill(0)
    this.#index.clear()
    this.#nodeId.length = 0
    this.#nodeFire.length = 0
    this.#nodeSeq.length = 0
    this.#nodeBucket.length = 0
    this.#nodePos.length = 0
    this.#free.length = 0
    this.#cachedDeadline = undefined
    this.#cacheValid = true
  }

  /**
   * Moves the wheel time to `nowMs` (an earlier time counts as the current wheel time) and returns
   * the ids whose fire time is at or before it, ordered by fire time, then by insertion.
   */
  advance(nowMs: number): ReadonlyArray<string> {
    const target = Math.max(this.#now, Math.floor(checkTime(nowMs)))
    const fired: Array<number> = []
    const old = this.#now
    this.#now = target
    if (this.#buckets[DUE]!.length > 0) this.#flush(DUE, fired)
    let topMoved = false
    for (let k = 0; k < this.levels; k++) {
      const tick = this.#ticks[k]!
      const oldTick = Math.floor(old / tick)
      const newTick = Math.floor(target / tick)
      if (newTick === oldTick) break // higher levels cannot have moved either
      if (k === this.levels - 1) topMoved = true
      if (this.#levelCount[k] === 0) continue
      const steps = Math.min(newTick - oldTick, this.slots)
      for (let j = 1; j <= steps; j++) {
        const bucket = this.#slotBucket(k, oldTick + j)
        if (this.#buckets[bucket]!.length > 0) this.#flush(bucket, fired)
      }
    }
    if (topMoved && this.#buckets[this.#overflow]!.length > 0) this.#flush(this.#overflow, fired)
    if (fired.length === 0) return []
    this.#cacheValid = false
    fired.sort((a, b) => this.#nodeFire[a]! - this.#nodeFire[b]! || this.#nodeSeq[a]! - this.#nodeSeq[b]!)
    const ids = fired.map((node) => this.#nodeId[node]!)
    for (const node of fired) this.#release(node)
    return ids
  }

  /**
   * Exact earliest pending fire time (possibly already past, for items added in the past), or
   * undefined when empty. Cost: a scan of at most `slots` buckets per non-empty level to find each
   * level's first bucket, then that bucket's minimum (kept incrementally, rescanned only after its
   * minimum item left); the answer is cached until the next advance or cancel of the minimum.
   */
  nextDeadlineMs(): number | undefined {
    if (this.#cacheValid) return this.#cachedDeadline
    let best = this.#min(DUE)
    for (let k = 0; k < this.levels; k++) {
      if (this.#levelCount[k] === 0) continue
      const tick = this.#ticks[k]!
      const current = Math.floor(this.#now / tick)
      for (let j = 1; j < this.slots; j++) {
        const bucket = this.#slotBucket(k, current + j)
        if (this.#buckets[bucket]!.length === 0) continue
        if ((current + j) * tick < best) best = Math.min(best, this.#min(bucket))
        break // buckets of one level cover disjoint, increasing ranges: the first one holds the level's minimum
      }
    }
    if (this.#buckets[this.#overflow]!.length > 0) best = Math.min(best, this.#min(this.#overflow))
    this.#cachedDeadline = best === Infinity ? undefined : best
    this.#cacheValid = true
    return this.#cachedDeadline
  }

  // -- internals -------------------------------------------------------------------------------

  #slotBucket(level: number, tickIndex: number): number {
    return 1 + level * this.slots + (((tickIndex % this.slots) + this.slots) % this.slots)
  }

  /** Puts a node in the bucket its fire time belongs to, relative to the current wheel time. */
  #place(node: number): void {
    const fire = this.#nodeFire[node]!
    if (fire <= this.#now) return this.#push(DUE, node)
    for (let k = 0; k < this.levels; k++) {
      const tick = this.#ticks[k]!
      const index = Math.floor(fire / tick)
      if (index < Math.floor(this.#now / tick) + this.slots) {
        this.#levelCount[k]!++
        return this.#push(this.#slotBucket(k, index), node)
      }
    }
    this.#push(this.#overflow, node)
  }

  #push(bucket: number, node: number): void {
    const items = this.#buckets[bucket]!
    const fire = this.#nodeFire[node]!
    if (items.length === 0) {
      this.#bucketMin[bucket] = fire
      this.#bucketMinValid[bucket] = true
    } else if (this.#bucketMinValid[bucket] && fire < this.#bucketMin[bucket]!) {
      this.#bucketMin[bucket] = fire
    }
    this.#nodeBucket[node] = bucket
    this.#nodePos[node] = items.length
    items.push(node)
  }

  /** Removes a node from its bucket (swap with the last entry). */
  #unlink(node: number): void {
    const bucket = this.#nodeBucket[node]!
    const items = this.#buckets[bucket]!
    const pos = this.#nodePos[node]!
    const last = items.pop()!
    if (last !== node) {
      items[pos] = last
      this.#nodePos[last] = pos
    }
    const level = this.#levelOf(bucket)
    if (level !== undefined) this.#levelCount[level]!--
    const fire = this.#nodeFire[node]!
    if (items.length === 0) {
      this.#bucketMin[bucket] = Infinity
      this.#bucketMinValid[bucket] = true
    } else if (fire === this.#bucketMin[bucket]) {
      this.#bucketMinValid[bucket] = false
    }
    if (this.#cacheValid && fire === this.#cachedDeadline) this.#cacheValid = false
  }

  #release(node: number): void {
    this.#index.delete(this.#nodeId[node]!)
    this.#nodeId[node] = undefined
    this.#free.push(node)
  }

  #levelOf(bucket: number): number | undefined {
    return bucket === DUE || bucket === this.#overflow ? undefined : Math.floor((bucket - 1) / this.slots)
  }

  /** Empties a bucket: items due at the wheel time go to `fired`, the others are placed again. */
  #flush(bucket: number, fired: Array<number>): void {
    const items = this.#buckets[bucket]!
    this.#buckets[bucket] = []
    this.#bucketMin[bucket] = Infinity
    this.#bucketMinValid[bucket] = true
    const level = this.#levelOf(bucket)
    if (level !== undefined) this.#levelCount[level]! -= items.length
    for (const node of items) {
      if (this.#nodeFire[node]! <= this.#now) fired.push(node)
      else this.#place(node)
    }
  }

  #min(bucket: number): number {
    const items = this.#buckets[bucket]!
    if (items.length === 0) return Infinity
    if (!this.#bucketMinValid[bucket]) {
      let min = Infinity
      for (const node of items) min = Math.min(min, this.#nodeFire[node]!)
      this.#bucketMin[bucket] = min
      this.#bucketMinValid[bucket] = true
    }
    return this.#bucketMin[bucket]!
  }
}

const checkTime = (ms: number): number => {
  if (!Number.isFinite(ms)) throw new RangeError(`TimerWheel: time must be a finite number of ms, got ${ms}`)
  return ms
}
