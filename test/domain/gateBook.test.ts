// A node's book of one gate (docs/tag-policies.md "How the limits hold across nodes"): permits come
// back with the outcome, a window token a window and the margin after the request was written — or
// after its admission when it was never written — so that no window sees more starts than the tokens; a
// write that comes late keeps its token until then. A paused or held gate admits nothing, nor one whose
// lease ran out. Two tests drive a queue of starts with Effect's TestClock: oldest first, at the pace
// the policy allows (docs/cron.md "How instances are made": instances held back go oldest first).
import { it as effectIt } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import { policyLimits } from "../../src/domain/gates/gate.ts"
import { CONCURRENCY, GateBook, tokenMarginMs } from "../../src/domain/gates/gateBook.ts"
import type { Throughput } from "../../src/domain/gates/throughput.ts"

const T0 = 1_750_000_000_000
const PACE_MARGIN_1S = tokenMarginMs(1_000)

/** A book leased the whole limit of its policy until far ahead. */
const leasedBook = (policy: { maxConcurrent?: number; throughput?: Throughput }) => {
  const limits = policyLimits({ maxConcurrent: policy.maxConcurrent ?? null, throughput: policy.throughput ?? null })
  const book = new GateBook(limits)
  book.lease({ permits: limits.maxConcurrent ?? 0, tokens: Object.fromEntries(limits.windows.map((w) => [w.label, w.limit])) }, Infinity)
  return book
}

describe("tokenMarginMs", () => {
  it.each([[1_000, 25], [60_000, 1_000], [10_000, 250], [100, 25]])("a %d ms window: %d ms", (windowMs, margin) => {
    expect(tokenMarginMs(windowMs)).toBe(margin)
  })
})

describe("maxConcurrent", () => {
  it("admits up to the permits held; a finished attempt gives its permit back", () => {
    const book = leasedBook({ maxConcurrent: 2 })
    book.take()
    book.take()
    expect(book.admits(T0)).toBe(false)
    book.finished(true, T0)
    expect(book.admits(T0)).toBe(true)
  })

  it("admits no more than its share when it holds more permits in use than its share (the others wait for them)", () => {
    const book = leasedBook({ maxConcurrent: 6 })
    book.take()
    book.take()
    book.lease({ permits: 6, tokens: {} }, Infinity, { permits: 1, tokens: {} })
    expect(book.admits(T0)).toBe(false)
    book.finished(true, T0)
    expect(book.admits(T0)).toBe(false)
    book.finished(true, T0)
    expect(book.admits(T0)).toBe(true)
  })

  it("admits no more than maxConcurrent even when it holds more permits (the limit was lowered)", () => {
    const book = leasedBook({ maxConcurrent: 5 })
    book.setLimits(policyLimits({ maxConcurrent: 1, throughput: null }))
    book.take()
    expect(book.admits(T0)).toBe(false)
  })

  it("nothing without a valid lease", () => {
    const book = new GateBook(policyLimits({ maxConcurrent: 5, throughput: null }))
    expect(book.admits(T0)).toBe(false)
    book.lease({ permits: 5, tokens: {} }, T0 + 1_000)
    expect(book.admits(T0 + 999)).toBe(true)
    expect(book.admits(T0 + 1_000)).toBe(false)
  })

  it("a policy with neither limit needs no lease", () => {
    expect(new GateBook(policyLimits({ maxConcurrent: null, throughput: null })).admits(T0)).toBe(true)
  })
})

describe("throughput windows count a start until a window (and the margin) after its write", () => {
  const margin = tokenMarginMs(1_000)

  it("the token of a start written at t comes free at t + window + margin, not before", () => {
    const book = leasedBook({ throughput: { "1s": 1 } })
    book.take()
    book.written(T0 + 40)
    expect(book.admits(T0 + 40 + 1_000 + margin - 1)).toBe(false)
    expect(book.nextTokenAtMs(T0 + 100)).toBe(T0 + 40 + 1_000 + margin)
    expect(book.admits(T0 + 40 + 1_000 + margin)).toBe(true)
  })

  it("a write that comes late (a connect, a busy loop) keeps the token until it happens", () => {
    const book = leasedBook({ throughput: { "1s": 1 } })
    book.take()
    expect(book.admits(T0 + 5_000)).toBe(false)
    expect(book.nextTokenAtMs(T0 + 5_000)).toBeNull()
    book.written(T0 + 5_000)
    expect(book.admits(T0 + 5_000 + 1_000 + margin)).toBe(true)
  })

  it("a request never written counts a window from its admission", () => {
    const book = leasedBook({ throughput: { "1s": 1 } })
    book.take()
    book.finished(false, T0)
    expect(book.admits(T0 + 1_000 + margin - 1)).toBe(false)
    expect(book.admits(T0 + 1_000 + margin)).toBe(true)
  })

  it("every window of the policy must have a token", () => {
    const book = leasedBook({ throughput: { "1s": 2, "1m": 3 } })
    for (let i = 0; i < 2; i++) {
      book.take()
      book.written(T0)
    }
    expect(book.admits(T0 + 2_000)).toBe(true)
    book.take()
    book.written(T0 + 2_000)
    expect(book.admits(T0 + 10_000)).toBe(false)
    expect(book.nextTokenAtMs(T0 + 10_000)).toBe(T0 + 60_000 + tokenMarginMs(60_000))
  })

  it("tokens in use cannot be given back; free ones can", () => {
    const book = leasedBook({ throughput: { "1s": 10 } })
    for (let i = 0; i < 4; i++) book.take()
    book.written(T0)
    expect(book.giveable(T0 + 10).tokens).toEqual({ "1s": 6 })
    expect(book.giveable(T0 + 1_000 + margin).tokens).toEqual({ "1s": 7 })
  })
})

describe("pacing of short windows", () => {
  it("{\"1s\": 1000}: a burst of 50 (5 %), then one a millisecond; tokens still bound the window", () => {
    const book = leasedBook({ throughput: { "1s": 1_000 } })
    let started = 0
    while (book.admits(T0)) {
      book.take()
      book.written(T0)
      started++
    }
    expect(started).toBe(50)
    expect(book.nextTokenAtMs(T0)).toBe(T0 + 1)
    for (let ms = 1; ms <= 950; ms++) {
      expect(book.admits(T0 + ms)).toBe(true)
      book.take()
      book.written(T0 + ms)
    }
    expect(book.admits(T0 + 999)).toBe(false)
    expect(book.nextTokenAtMs(T0 + 999)).toBe(T0 + 1_000 + PACE_MARGIN_1S)
  })

  it("a small limit goes at once ({\"1s\": 5}: five), a long window is not paced ({\"1h\": 500}: 500)", () => {
    for (const [throughput, burst] of [[{ "1s": 5 }, 5], [{ "1h": 500 }, 500]] as const) {
      const book = leasedBook({ throughput })
      let started = 0
      while (book.admits(T0)) {
        book.take()
        book.written(T0)
        started++
      }
      expect(started).toBe(burst)
    }
  })
})

describe("paused, held, demand", () => {
  it("a paused policy admits nothing and wants nothing", () => {
    const book = leasedBook({ maxConcurrent: 3, throughput: { "1s": 0 } })
    expect(book.admits(T0)).toBe(false)
    expect(book.demand(50, T0)).toEqual({ [CONCURRENCY]: 0 })
  })

  it("a held tag admits nothing until heldUntil, and wants only what it has in use", () => {
    const book = leasedBook({ maxConcurrent: 3, throughput: { "1s": 10 } })
    book.take()
    book.heldUntilMs = T0 + 2_000
    expect(book.admits(T0 + 1_999)).toBe(false)
    expect(book.demand(50, T0)).toEqual({ [CONCURRENCY]: 1, "1s": 1 })
    expect(book.admits(T0 + 2_000)).toBe(true)
    expect(book.demand(50, T0 + 2_000)).toEqual({ [CONCURRENCY]: 3, "1s": 10 })
  })
})

/** Starts `names` in order through a book leased the whole policy, each written at once; when each starts (ms after the first). */
const runQueue = (throughput: Throughput, names: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const book = leasedBook({ throughput })
    const startedAt: Array<readonly [string, number]> = []
    const start0 = yield* Clock.currentTimeMillis
    for (const name of names) {
      for (;;) {
        const nowMs = yield* Clock.currentTimeMillis
        if (book.admits(nowMs)) {
          book.take()
          book.written(nowMs)
          startedAt.push([name, nowMs - start0])
          break
        }
        yield* TestClock.adjust(book.nextTokenAtMs(nowMs)! - nowMs)
      }
    }
    return Object.fromEntries(startedAt)
  })

describe("under a TestClock (docs/tag-policies.md: oldest first, at the policy's pace)", () => {
  effectIt.effect("{\"1m\": 0.5}: one every two minutes (and the margin)", () =>
    Effect.gen(function*() {
      const step = 120_000 + tokenMarginMs(120_000)
      expect(yield* runQueue({ "1m": 0.5 }, ["first", "second", "third"])).toEqual({ first: 0, second: step, third: 2 * step })
    }))

  effectIt.effect("{\"1s\": 2, \"1m\": 3}: two, one a second later, then the minute decides", () =>
    Effect.gen(function*() {
      const second = 1_000 + tokenMarginMs(1_000)
      const minute = 60_000 + tokenMarginMs(60_000)
      expect(yield* runQueue({ "1s": 2, "1m": 3 }, ["a", "b", "c", "d", "e", "f"])).toEqual({
        a: 0, b: 0, c: second, d: minute, e: minute, f: minute + second
      })
    }))
})
