// TimerWheel as plain code: boundaries, ordering, exact deadlines, and a seeded random comparison
// with a naive sorted-array model over many operations and several wheel shapes.
import { describe, expect, it } from "vitest"
import { TimerWheel } from "../../src/scheduler/timerWheel.ts"

const T0 = Date.UTC(2026, 10, 22, 10, 0, 0, 0) + 12_345 // deliberately not aligned to any tick

/** Naive model: every pending item with its insertion order; due = fire <= now, ordered. */
class Model {
  now: number
  items = new Map<string, { fire: number; seq: number }>()
  seq = 0
  constructor(now: number) {
    this.now = now
  }
  add(id: string, fire: number) {
    this.items.set(id, { fire, seq: this.seq++ })
  }
  cancel(id: string) {
    return this.items.delete(id)
  }
  advance(now: number): Array<string> {
    this.now = Math.max(this.now, now)
    const due = [...this.items].filter(([, v]) => v.fire <= this.now)
    due.sort(([, a], [, b]) => a.fire - b.fire || a.seq - b.seq)
    for (const [id] of due) this.items.delete(id)
    return due.map(([id]) => id)
  }
  next(): number | undefined {
    let min: number | undefined
    for (const { fire } of this.items.values()) if (min === undefined || fire < min) min = fire
    return min
  }
}

/** mulberry32: small seeded PRNG. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

describe("TimerWheel basics", () => {
  it("default shape: 4 levels of 64 slots, horizon 63 × 64³ ms", () => {
    const w = new TimerWheel({ nowMs: T0 })
    expect([w.levels, w.slots, w.horizonMs]).toEqual([4, 64, 63 * 64 ** 3])
    expect(w.nowMs).toBe(T0)
    expect(w.size).toBe(0)
    expect(w.nextDeadlineMs()).toBeUndefined()
    expect(w.advance(T0 + 1_000_000)).toEqual([])
  })

  it("fires at exactly its millisecond, not before", () => {
    const w = new TimerWheel({ nowMs: T0 })
    w.add("a", T0 + 1)
    w.add("b", T0 + 100)
    w.add("c", T0 + 5_000)
    w.add("d", T0 + 300_000)
    w.add("e", T0 + 3_600_000)
    for (const [id, at] of [["a", 1], ["b", 100], ["c", 5_000], ["d", 300_000], ["e", 3_600_000]] as const) {
      expect(w.nextDeadlineMs()).toBe(T0 + at)
      expect(w.advance(T0 + at - 1)).toEqual([])
      expect(w.advance(T0 + at)).toEqual([id])
    }
    expect(w.size).toBe(0)
  })

  it("orders by fire time, then by insertion within the same millisecond", () => {
    const w = new TimerWheel({ nowMs: T0 })
    w.add("late", T0 + 200_000)
    w.add("x1", T0 + 70)
    w.add("early", T0 + 3)
    w.add("x2", T0 + 70)
    w.add("x0", T0 + 70)
    w.add("mid", T0 + 5_000)
    expect(w.advance(T0 + 1_000_000)).toEqual(["early", "x1", "x2", "x0", "mid", "late"])
  })

  it("re-adding moves an item and counts as a new insertion", () => {
    const w = new TimerWheel({ nowMs: T0 })
    w.add("a", T0 + 10)
    w.add("b", T0 + 10)
    w.add("a", T0 + 10)
    expect(w.size).toBe(2)
    expect(w.advance(T0 + 10)).toEqual(["b", "a"])
    w.add("c", T0 + 5_000_000)
    w.add("c", T0 + 20)
    expect(w.fireAtMs("c")).toBe(T0 + 20)
    expect(w.nextDeadlineMs()).toBe(T0 + 20)
    expect(w.advance(T0 + 20)).toEqual(["c"])
    w.add("d", T0 + 30)
    w.add("d", T0 + 1_000)
    expect(w.advance(T0 + 999)).toEqual([])
    expect(w.advance(T0 + 1_000)).toEqual(["d"])
  })

  it("cancel removes; an unknown or fired id is a no-op", () => {
    const w = new TimerWheel({ nowMs: T0 })
    w.add("a", T0 + 10)
    w.add("b", T0 + 20)
    expect(w.cancel("nope")).toBe(false)
    expect(w.cancel("a")).toBe(true)
    expect(w.cancel("a")).toBe(false)
    expect(w.has("a")).toBe(false)
    expect(w.has("b")).toBe(true)
    expect(w.nextDeadlineMs()).toBe(T0 + 20)
    expect(w.advance(T0 + 100)).toEqual(["b"])
    expect(w.cancel("b")).toBe(false)
    expect(w.size).toBe(0)
    expect(w.nextDeadlineMs()).toBeUndefined()
  })

  it("items added at or before the wheel time fire on the next advance, even without moving time", () => {
    const w = new TimerWheel({ nowMs: T0 })
    w.add("now", T0)
    w.add("past", T0 - 60_000)
    w.add("future", T0 + 1)
    expect(w.nextDeadlineMs()).toBe(T0 - 60_000)
    expect(w.advance(T0)).toEqual(["past", "now"])
    expect(w.advance(T0 - 5_000)).toEqual([]) // an earlier time is the current wheel time
    expect(w.nowMs).toBe(T0)
    expect(w.advance(T0 + 1)).toEqual(["future"])
  })

  it("an earlier advance never moves the wheel backwards", () => {
    const w = new TimerWheel({ nowMs: T0 })
    w.advance(T0 + 1_000)
    w.add("a", T0 + 500)
    w.add("b", T0 + 1_001)
    expect(w.advance(T0)).toEqual(["a"])
    expect(w.advance(T0 + 1_001)).toEqual(["b"])
  })

  it("has, size, fireAtMs and clear", () => {
    const w = new TimerWheel({ nowMs: T0 })
    w.add("a", T0 + 5)
    w.add("b", T0 + w.horizonMs * 3)
    expect([w.size, w.has("a"), w.has("b"), w.fireAtMs("b"), w.fireAtMs("x")]).toEqual([2, true, true, T0 + w.horizonMs * 3, undefined])
    w.clear()
    expect([w.size, w.has("a"), w.overflowSize, w.nextDeadlineMs()]).toEqual([0, false, 0, undefined])
    expect(w.advance(T0 + w.horizonMs * 4)).toEqual([])
    w.add("a", T0 + w.horizonMs * 4 + 1)
    expect(w.advance(T0 + w.horizonMs * 4 + 1)).toEqual(["a"])
  })

  it("truncates fractional milliseconds and rejects non-finite times", () => {
    const w = new TimerWheel({ nowMs: T0 + 0.7 })
    expect(w.nowMs).toBe(T0)
    w.add("a", T0 + 10.9)
    expect(w.nextDeadlineMs()).toBe(T0 + 10)
    expect(() => w.add("b", Number.NaN)).toThrow(RangeError)
    expect(() => w.advance(Number.POSITIVE_INFINITY)).toThrow(RangeError)
    expect(w.size).toBe(1)
  })
})

describe("TimerWheel horizon and overflow", () => {
  it("everything within [now, now + horizon) stays in the wheel, whatever the alignment", () => {
    const rand = prng(7)
    for (let i = 0; i < 200; i++) {
      const now = Math.floor(rand() * 2 ** 40)
      const w = new TimerWheel({ nowMs: now })
      w.add("edge", now + w.horizonMs - 1)
      w.add("far", now + Math.floor(rand() * w.horizonMs))
      expect(w.overflowSize).toBe(0)
    }
  })

  it("beyond the horizon goes to the overflow list and still fires exactly", () => {
    const w = new TimerWheel({ nowMs: T0 })
    const far = T0 + w.horizonMs * 5 + 17
    w.add("far", far)
    w.add("edge", T0 + w.horizonMs)
    expect(w.overflowSize).toBeGreaterThanOrEqual(1)
    expect(w.nextDeadlineMs()).toBe(T0 + w.horizonMs)
    expect(w.advance(T0 + w.horizonMs)).toEqual(["edge"])
    expect(w.nextDeadlineMs()).toBe(far)
    // walk towards it in big steps: it must come back into the wheel and not fire early
    for (let t = T0 + w.horizonMs; t < far - 1; t = Math.min(t + 3_000_000, far - 1)) {
      expect(w.advance(t)).toEqual([])
      expect(w.nextDeadlineMs()).toBe(far)
    }
    expect(w.overflowSize).toBe(0)
    expect(w.advance(far - 1)).toEqual([])
    expect(w.advance(far)).toEqual(["far"])
  })

  it("one jump over several levels and the overflow fires everything due, in order", () => {
    const w = new TimerWheel({ nowMs: T0 })
    const offsets = [w.horizonMs * 10, 1, 63, 64, 65, 4_095, 4_096, 262_143, 262_144, 16_777_215, w.horizonMs - 1, w.horizonMs]
    offsets.forEach((o, i) => w.add(`i${i}`, T0 + o))
    const expected = offsets.map((o, i) => [o, `i${i}`] as const).sort((a, b) => a[0] - b[0]).map(([, id]) => id)
    expect(w.advance(T0 + w.horizonMs * 10)).toEqual(expected)
    expect(w.size).toBe(0)
  })

  it("a jump that lands mid-bucket keeps the rest of the bucket pending", () => {
    const w = new TimerWheel({ nowMs: T0 })
    const base = T0 + 1_000_000
    for (let i = 0; i < 100; i++) w.add(`x${i}`, base + i * 37)
    const fired = w.advance(base + 50 * 37)
    expect(fired).toEqual(Array.from({ length: 51 }, (_, i) => `x${i}`))
    expect(w.nextDeadlineMs()).toBe(base + 51 * 37)
    expect(w.size).toBe(49)
  })

  it("wraps around slot arrays as time passes many full rotations", () => {
    const w = new TimerWheel({ nowMs: T0, slotBits: 2, levels: 2 }) // 4 slots, ticks 1 and 4 ms, horizon 12
    expect(w.horizonMs).toBe(12)
    let t = T0
    for (let i = 0; i < 500; i++) {
      w.add(`a${i}`, t + (i % 11) + 1)
      w.add(`b${i}`, t + 40 + (i % 7))
      const next = w.nextDeadlineMs()!
      expect(next).toBe(t + (i % 11) + 1)
      expect(w.advance(next)).toEqual([`a${i}`])
      t = next
      expect(w.advance(t + 40 + 7)).toEqual([`b${i}`]) // a's lead was < 40 ms, so b fires alone
      t = t + 47
      w.advance(t)
    }
    expect(w.size).toBe(0)
  })
})

describe("TimerWheel nextDeadlineMs exactness", () => {
  it("is the exact minimum even when a coarse bucket starts before a finer item", () => {
    const w = new TimerWheel({ nowMs: 0 })
    w.add("coarse", 100) // level 1 bucket [64, 128)
    w.advance(60) // nothing due, bucket still unflushed
    w.add("fine", 110) // level 0
    expect(w.nextDeadlineMs()).toBe(100)
    w.cancel("coarse")
    expect(w.nextDeadlineMs()).toBe(110)
    w.add("coarse2", 105)
    expect(w.nextDeadlineMs()).toBe(105)
    expect(w.advance(105)).toEqual(["coarse2"])
    expect(w.nextDeadlineMs()).toBe(110)
  })

  it("recomputes a bucket's minimum after that minimum is cancelled", () => {
    const w = new TimerWheel({ nowMs: 0 })
    for (let i = 0; i < 50; i++) w.add(`x${i}`, 1_000_000 + 1_000 * (50 - i))
    for (let i = 49; i >= 0; i--) {
      expect(w.nextDeadlineMs()).toBe(1_000_000 + 1_000 * (50 - i))
      w.cancel(`x${i}`)
    }
    expect(w.nextDeadlineMs()).toBeUndefined()
  })
})

describe("TimerWheel against a sorted-array model (seeded)", () => {
  const shapes = [
    { name: "default 4×64", slotBits: 6, levels: 4 },
    { name: "tiny 2×4 (constant overflow traffic)", slotBits: 2, levels: 2 },
    { name: "3×8", slotBits: 3, levels: 3 }
  ]
  for (const shape of shapes) {
    for (const seed of [1, 2, 3]) {
      it(`${shape.name}, seed ${seed}: 20 000 random operations agree`, () => {
        const rand = prng(seed * 1_000 + shape.slotBits)
        const start = T0 + Math.floor(rand() * 1e6)
        const w = new TimerWheel({ nowMs: start, slotBits: shape.slotBits, levels: shape.levels })
        const m = new Model(start)
        const H = w.horizonMs
        const ids = Array.from({ length: 400 }, (_, i) => `id-${i}`)
        const pick = () => ids[Math.floor(rand() * ids.length)]!
        const offset = (): number => {
          const r = rand()
          if (r < 0.05) return -Math.floor(rand() * 5_000) // past
          if (r < 0.1) return 0
          if (r < 0.4) return Math.floor(rand() * Math.min(H, 200)) // near, duplicates likely
          if (r < 0.85) return Math.floor(rand() * H) // anywhere within the horizon
          if (r < 0.9) return H - 1 + Math.floor(rand() * 3) // at the horizon edge
          return H + Math.floor(rand() * 4 * H) // beyond
        }
        for (let op = 0; op < 20_000; op++) {
          const r = rand()
          if (r < 0.45) {
            const id = pick()
            const at = m.now + offset()
            w.add(id, at)
            m.add(id, at)
          } else if (r < 0.6) {
            const id = rand() < 0.1 ? "unknown" : pick()
            expect(w.cancel(id)).toBe(m.cancel(id))
          } else if (r < 0.95) {
            const q = rand()
            const step =
              q < 0.3 ? 0 : q < 0.6 ? Math.floor(rand() * 70) : q < 0.85 ? Math.floor(rand() * H) : Math.floor(rand() * 3 * H)
            const to = q < 0.05 ? m.now - 10 : m.now + step
            expect(w.advance(to)).toEqual(m.advance(to))
          } else {
            // sleep exactly until the next deadline, as the shard actor does
            const next = w.nextDeadlineMs()
            expect(next).toBe(m.next())
            if (next !== undefined) {
              if (next > m.now) {
                expect(w.advance(next - 1)).toEqual([])
                m.advance(next - 1)
              }
              const fired = w.advance(next)
              expect(fired).toEqual(m.advance(next))
              expect(fired.length).toBeGreaterThan(0)
            }
          }
          expect(w.size).toBe(m.items.size)
          if (op % 7 === 0) expect(w.nextDeadlineMs()).toBe(m.next())
        }
        for (const id of ids) expect(w.has(id)).toBe(m.items.has(id))
        const end = m.now + 10 * H
        expect(w.advance(end)).toEqual(m.advance(end))
        expect(w.size).toBe(0)
      })
    }
  }
})

describe("TimerWheel scale", () => {
  it("handles 200 000 items spread over the horizon with cancels, firing each exactly once in order", () => {
    const rand = prng(99)
    const w = new TimerWheel({ nowMs: T0 })
    const fireAt = new Map<string, number>()
    for (let i = 0; i < 200_000; i++) {
      const at = T0 + Math.floor(rand() * w.horizonMs)
      w.add(`t${i}`, at)
      fireAt.set(`t${i}`, at)
    }
    for (let i = 0; i < 200_000; i += 3) {
      w.cancel(`t${i}`)
      fireAt.delete(`t${i}`)
    }
    let fired = 0
    let last = -Infinity
    let now = T0
    while (w.size > 0) {
      const next = w.nextDeadlineMs()!
      expect(next).toBeGreaterThan(now)
      now = next + Math.floor(rand() * 50_000)
      for (const id of w.advance(now)) {
        const at = fireAt.get(id)!
        expect(at).toBeGreaterThanOrEqual(last)
        expect(at).toBeLessThanOrEqual(now)
        last = at
        fired++
      }
    }
    expect(fired).toBe(fireAt.size)
  })
})
