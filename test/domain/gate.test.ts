// The gate arithmetic as tables: throughput → windows (stretching, pause), one gate's verdict and
// allowance at window boundaries, and planAdmission over several tags (no head-of-line blocking,
// nextCheckAtMs). Two tests drive time with Effect's TestClock to show held-back triggers fire
// oldest first at the pace the policy allows (SPEC Recurring behaviour 3).
import { it as effectIt } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import {
  effectiveWindows, gateAllowance, gateOf, gateVerdict, planAdmission, START_MARGIN_MS, startStampMs, startsLookback
} from "../../src/domain/gate.ts"
import type { AdmissionCandidate, Gate, GateLimits, GateVerdict } from "../../src/domain/gate.ts"
import type { Throughput } from "../../src/domain/throughput.ts"

const T0 = 1_750_000_000_000
const SECOND = 1_000
const MINUTE = 60_000

const gate = (
  over: { throughput?: Throughput; maxConcurrent?: number; inFlight?: number; starts?: ReadonlyArray<number> } = {}
): Gate =>
  gateOf(
    { maxConcurrent: over.maxConcurrent ?? null, throughput: over.throughput ?? null },
    { inFlight: over.inFlight ?? 0, recentStarts: over.starts ?? [] }
  )

const ADMIT: GateVerdict = { _tag: "Admit" }
const COMPLETION: GateVerdict = { _tag: "WaitForCompletion" }
const PAUSED: GateVerdict = { _tag: "Paused" }
const until = (atMs: number): GateVerdict => ({ _tag: "WaitUntil", atMs })

describe("effectiveWindows: throughput → { label, windowMs, limit }", () => {
  const rows: ReadonlyArray<readonly [throughput: Throughput | null, expected: GateLimits]> = [
    [null, { paused: false, windows: [] }],
    [{ "1s": 10 }, { paused: false, windows: [{ label: "1s", windowMs: 1_000, limit: 10 }] }],
    [{ "1s": 1 }, { paused: false, windows: [{ label: "1s", windowMs: 1_000, limit: 1 }] }],
    [{ "1s": 2.5 }, { paused: false, windows: [{ label: "1s", windowMs: 1_000, limit: 2 }] }],
    [{ "1m": 0.5 }, { paused: false, windows: [{ label: "1m", windowMs: 120_000, limit: 1 }] }],
    [{ "1h": 0.25 }, { paused: false, windows: [{ label: "1h", windowMs: 4 * 3_600_000, limit: 1 }] }],
    [{ "10d": 0.3333333333333333 }, { paused: false, windows: [{ label: "10d", windowMs: 30 * 86_400_000, limit: 1 }] }],
    [{ "15m": 100, "2h": 500, "7d": 9000 }, {
      paused: false,
      windows: [
        { label: "15m", windowMs: 900_000, limit: 100 },
        { label: "2h", windowMs: 7_200_000, limit: 500 },
        { label: "7d", windowMs: 604_800_000, limit: 9000 }
      ]
    }],
    [{ "1s": 0 }, { paused: true, windows: [] }],
    [{ "1s": 0, "1m": 5 }, { paused: true, windows: [{ label: "1m", windowMs: 60_000, limit: 5 }] }],
    // never stored (decoding refuses them), but a broken policy fails closed
    [{ "1w": 1 }, { paused: true, windows: [] }],
    [{ "1s": -1 }, { paused: true, windows: [] }]
  ]
  it.each(rows)("%j", (throughput, expected) => {
    expect(effectiveWindows(throughput)).toEqual(expected)
  })

  it("startsLookback: the longest window and the largest limit", () => {
    expect(startsLookback(effectiveWindows({ "1s": 2, "1m": 3 }).windows)).toEqual({ windowMs: 60_000, count: 3 })
    expect(startsLookback(effectiveWindows({ "1s": 50, "1m": 0.5 }).windows)).toEqual({ windowMs: 120_000, count: 50 })
    expect(startsLookback([])).toBeNull()
  })
})

describe("gateVerdict: one gate at nowMs", () => {
  const rows: ReadonlyArray<readonly [what: string, gate: Gate, nowMs: number, expected: GateVerdict]> = [
    ["no limits", gate(), T0, ADMIT],
    // boundaries: the window is (now − windowMs, now]
    ["1/s, a start at t0, at t0", gate({ throughput: { "1s": 1 }, starts: [T0] }), T0, until(T0 + SECOND)],
    ["1/s, a start at t0, at t0+999", gate({ throughput: { "1s": 1 }, starts: [T0] }), T0 + 999, until(T0 + SECOND)],
    ["1/s, a start at t0, at t0+1000", gate({ throughput: { "1s": 1 }, starts: [T0] }), T0 + SECOND, ADMIT],
    ["2.5/s admits 2: one start", gate({ throughput: { "1s": 2.5 }, starts: [T0] }), T0 + 20, ADMIT],
    ["2.5/s admits 2: two starts", gate({ throughput: { "1s": 2.5 }, starts: [T0, T0 + 10] }), T0 + 20, until(T0 + SECOND)],
    ["3/s: the oldest of the last 3 must leave", gate({ throughput: { "1s": 3 }, starts: [T0 - 5_000, T0, T0 + 100, T0 + 200] }), T0 + 300, until(T0 + SECOND)],
    ["starts given out of order are sorted", gate({ throughput: { "1s": 2 }, starts: [T0 + 200, T0 - 900, T0 + 100] }), T0 + 300, until(T0 + 1_100)],
    ["a start stamped ahead of now counts", gate({ throughput: { "1s": 1 }, starts: [T0 + 500] }), T0, until(T0 + 1_500)],
    // stretching
    ["1m at 0.5: at t0+60s", gate({ throughput: { "1m": 0.5 }, starts: [T0] }), T0 + MINUTE, until(T0 + 2 * MINUTE)],
    ["1m at 0.5: at t0+120s", gate({ throughput: { "1m": 0.5 }, starts: [T0] }), T0 + 2 * MINUTE, ADMIT],
    // several windows on one tag: all must admit
    ["2/s + 3/min: the minute is full", gate({ throughput: { "1s": 2, "1m": 3 }, starts: [T0, T0 + 100, T0 + 1_500] }), T0 + 1_600, until(T0 + MINUTE)],
    ["2/s + 3/min: the second is full", gate({ throughput: { "1s": 2, "1m": 3 }, starts: [T0 + 1_500, T0 + 1_600] }), T0 + 1_700, until(T0 + 2_500)],
    ["2/s + 3/min: both full, the later wins", gate({ throughput: { "1s": 2, "1m": 3 }, starts: [T0, T0 + 900, T0 + 950] }), T0 + 960, until(T0 + MINUTE)],
    ["2/s + 3/min: both have room", gate({ throughput: { "1s": 2, "1m": 3 }, starts: [T0 - MINUTE, T0 - 2_000] }), T0, ADMIT],
    // concurrency and pause
    ["maxConcurrent 2, 1 in flight", gate({ maxConcurrent: 2, inFlight: 1 }), T0, ADMIT],
    ["maxConcurrent 2, 2 in flight", gate({ maxConcurrent: 2, inFlight: 2 }), T0, COMPLETION],
    ["maxConcurrent lowered below in flight", gate({ maxConcurrent: 2, inFlight: 5 }), T0, COMPLETION],
    ["concurrency and a window both full: a completion first", gate({ maxConcurrent: 1, inFlight: 1, throughput: { "1s": 1 }, starts: [T0] }), T0, COMPLETION],
    ["paused", gate({ throughput: { "1s": 0 } }), T0, PAUSED],
    ["paused beats everything", gate({ throughput: { "1s": 0, "1m": 5 }, maxConcurrent: 1, inFlight: 1 }), T0, PAUSED]
  ]
  it.each(rows)("%s", (_what, g, nowMs, expected) => {
    expect(gateVerdict(g, nowMs)).toEqual(expected)
  })
})

describe("gateAllowance: how many start now, and when one more may", () => {
  const rows: ReadonlyArray<readonly [what: string, gate: Gate, nowMs: number, now: number, nextAtMs: number | null]> = [
    ["no limits", gate(), T0, Infinity, null],
    ["1/s, a start at t0, at t0+999", gate({ throughput: { "1s": 1 }, starts: [T0] }), T0 + 999, 0, T0 + SECOND],
    ["1/s, a start at t0, at t0+1000: the start has left", gate({ throughput: { "1s": 1 }, starts: [T0] }), T0 + SECOND, 1, T0 + 2 * SECOND],
    ["maxConcurrent 5, 2 in flight", gate({ maxConcurrent: 5, inFlight: 2 }), T0, 3, null],
    ["10/s, nothing started", gate({ throughput: { "1s": 10 } }), T0, 10, T0 + SECOND],
    ["10/s, 4 started", gate({ throughput: { "1s": 10 }, starts: [T0, T0 + 1, T0 + 2, T0 + 3] }), T0 + 500, 6, T0 + SECOND],
    ["10/s but maxConcurrent 3: a completion next", gate({ throughput: { "1s": 10 }, maxConcurrent: 3 }), T0, 3, null],
    ["3/s and maxConcurrent 3: both full after, a completion next", gate({ throughput: { "1s": 3 }, maxConcurrent: 3 }), T0, 3, null],
    ["2/s + 3/min, nothing started: 2 now, the third after a second", gate({ throughput: { "1s": 2, "1m": 3 } }), T0, 2, T0 + SECOND],
    ["2/s + 3/min, 2 this minute", gate({ throughput: { "1s": 2, "1m": 3 }, starts: [T0 - 30_000, T0 - 20_000] }), T0, 1, T0 + 30_000],
    ["1m at 0.5, one start", gate({ throughput: { "1m": 0.5 }, starts: [T0] }), T0 + SECOND, 0, T0 + 2 * MINUTE],
    ["a huge rate is counted, not simulated", gate({ throughput: { "1s": 1e12 } }), T0, 1e12, T0 + SECOND],
    ["a start ahead of now: after one at now, the window frees at now + 1 s", gate({ throughput: { "1s": 2 }, starts: [T0 + 500] }), T0, 1, T0 + SECOND],
    ["paused", gate({ throughput: { "1s": 0 } }), T0, 0, null]
  ]
  it.each(rows)("%s", (_what, g, nowMs, now, nextAtMs) => {
    expect(gateAllowance(g, nowMs)).toEqual({ now, nextAtMs })
  })
})

describe("planAdmission", () => {
  const c = (id: string, ...tags: ReadonlyArray<string>): AdmissionCandidate => ({ id, tags })
  const gates = (entries: Record<string, Gate>): ReadonlyMap<string, Gate> => new Map(Object.entries(entries))

  const rows: ReadonlyArray<readonly [
    what: string,
    gates: ReadonlyMap<string, Gate>,
    candidates: ReadonlyArray<AdmissionCandidate>,
    admitted: ReadonlyArray<string>,
    nextCheckAtMs: number | null
  ]> = [
    ["nothing waits", gates({ x: gate({ maxConcurrent: 1 }) }), [], [], null],
    ["ungated tags start at once", gates({ x: gate({ maxConcurrent: 1 }) }), [c("a", "y"), c("b"), c("d", "z")], ["a", "b", "d"], null],
    ["maxConcurrent 2: the oldest two, then a completion", gates({ x: gate({ maxConcurrent: 2 }) }), [c("a", "x"), c("b", "x"), c("d", "x")], ["a", "b"], null],
    ["maxConcurrent counts those already in flight", gates({ x: gate({ maxConcurrent: 2, inFlight: 1 }) }), [c("a", "x"), c("b", "x")], ["a"], null],
    ["2/s: the oldest two, the third after a second", gates({ x: gate({ throughput: { "1s": 2 } }) }), [c("a", "x"), c("b", "x"), c("d", "x")], ["a", "b"], T0 + SECOND],
    ["the next check counts what this plan started", gates({ x: gate({ throughput: { "1m": 0.5 } }) }), [c("a", "x"), c("b", "x")], ["a"], T0 + 2 * MINUTE],
    ["a paused tag: nothing, and no time to wait for", gates({ x: gate({ throughput: { "1s": 0 } }) }), [c("a", "x"), c("b", "x")], [], null],
    [
      "a paused tag does not hold back others",
      gates({ x: gate({ throughput: { "1s": 0 } }), y: gate({ maxConcurrent: 5 }) }),
      [c("a", "x"), c("b", "y"), c("d", "x"), c("e", "y")],
      ["b", "e"],
      null
    ],
    [
      "no head-of-line blocking across tags",
      gates({ x: gate({ throughput: { "1s": 1 }, starts: [T0 - 200] }), y: gate({ throughput: { "1s": 5 } }) }),
      [c("x1", "x"), c("y1", "y"), c("x2", "x"), c("y2", "y")],
      ["y1", "y2"],
      T0 + 800
    ],
    [
      "several tags on one trigger: every gate must admit",
      gates({ x: gate({ maxConcurrent: 5 }), y: gate({ maxConcurrent: 1, inFlight: 1 }) }),
      [c("xy", "x", "y"), c("x1", "x")],
      ["x1"],
      null
    ],
    [
      "an admitted trigger consumes from each of its gates",
      gates({ x: gate({ maxConcurrent: 5 }), y: gate({ throughput: { "1s": 1 } }) }),
      [c("xy", "x", "y"), c("y1", "y"), c("x1", "x")],
      ["xy", "x1"],
      T0 + SECOND
    ],
    [
      "a tag listed twice consumes once",
      gates({ x: gate({ maxConcurrent: 2 }) }),
      [c("a", "x", "x"), c("b", "x")],
      ["a", "b"],
      null
    ],
    [
      "the next check is the earliest blocked candidate's",
      gates({ x: gate({ throughput: { "1s": 1 }, starts: [T0 - 500] }), y: gate({ throughput: { "1s": 1 }, starts: [T0 - 100] }) }),
      [c("y1", "y"), c("x1", "x")],
      [],
      T0 + 500
    ],
    [
      "a candidate under two windows waits for the later",
      gates({ x: gate({ throughput: { "1s": 1 }, starts: [T0 - 500] }), y: gate({ throughput: { "1s": 1 }, starts: [T0 - 100] }) }),
      [c("xy", "x", "y")],
      [],
      T0 + 900
    ],
    [
      "a window and a full concurrency on one candidate: only a completion helps",
      gates({ x: gate({ throughput: { "1s": 1 }, starts: [T0 - 500] }), y: gate({ maxConcurrent: 1, inFlight: 1 }) }),
      [c("xy", "x", "y")],
      [],
      null
    ],
    [
      "one candidate waits for a completion, another for a window",
      gates({ x: gate({ maxConcurrent: 1, inFlight: 1 }), y: gate({ throughput: { "1m": 1 }, starts: [T0 - 10_000] }) }),
      [c("x1", "x"), c("y1", "y")],
      [],
      T0 + 50_000
    ],
    [
      "2/s + 3/min on one tag: the second frees first, the minute later",
      gates({ x: gate({ throughput: { "1s": 2, "1m": 3 }, starts: [T0 - 5_000] }) }),
      [c("a", "x"), c("b", "x"), c("d", "x")],
      ["a", "b"],
      T0 + 55_000
    ],
    [
      "concurrency and throughput on one tag",
      gates({ x: gate({ maxConcurrent: 3, throughput: { "1s": 2 }, inFlight: 2 }) }),
      [c("a", "x"), c("b", "x")],
      ["a"],
      null
    ]
  ]
  it.each(rows)("%s", (_what, g, candidates, admitted, nextCheckAtMs) => {
    expect(planAdmission({ nowMs: T0, gates: g, candidates })).toEqual({ admitted, nextCheckAtMs })
  })

  it("does not change the gates it was given", () => {
    const g = gate({ throughput: { "1s": 1 }, starts: [T0 - 2_000] })
    planAdmission({ nowMs: T0, gates: new Map([["x", g]]), candidates: [c("a", "x")] })
    expect(g).toEqual(gate({ throughput: { "1s": 1 }, starts: [T0 - 2_000] }))
  })
})

/**
 * Held-back triggers of one tag, started as the plan allows, time driven by the TestClock: each
 * round plans at Clock's now, records the starts, and sleeps until nextCheckAtMs. Returns the
 * start times (ms since the test clock's 0) by trigger id.
 */
const runQueue = (throughput: Throughput, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const startedAt = new Map<string, number>()
    const starts: Array<number> = []
    let waiting = ids.map((id) => ({ id, tags: ["x"] }))
    while (waiting.length > 0) {
      const nowMs = yield* Clock.currentTimeMillis
      const g = gateOf({ maxConcurrent: null, throughput }, { inFlight: 0, recentStarts: starts })
      const plan = planAdmission({ nowMs, gates: new Map([["x", g]]), candidates: waiting })
      for (const id of plan.admitted) {
        startedAt.set(id, nowMs)
        starts.push(nowMs)
      }
      waiting = waiting.filter((candidate) => !plan.admitted.includes(candidate.id))
      if (plan.nextCheckAtMs === null) break
      yield* TestClock.adjust(plan.nextCheckAtMs - nowMs)
    }
    return Object.fromEntries(startedAt)
  })

describe("under a TestClock (SPEC Recurring behaviour 3: oldest first, at the policy's pace)", () => {
  effectIt.effect("{\"1m\": 0.5}: one every two minutes", () =>
    Effect.gen(function*() {
      expect(yield* runQueue({ "1m": 0.5 }, ["first", "second", "third"])).toEqual({
        first: 0, second: 120_000, third: 240_000
      })
    }))

  effectIt.effect("{\"1s\": 2, \"1m\": 3}: two, one a second later, then the minute decides", () =>
    Effect.gen(function*() {
      expect(yield* runQueue({ "1s": 2, "1m": 3 }, ["a", "b", "c", "d", "e", "f"])).toEqual({
        a: 0, b: 0, c: 1_000, d: 60_000, e: 60_000, f: 61_000
      })
    }))
})

describe("startStampMs: a start is recorded a little after its admission", () => {
  it("at admission without a window, START_MARGIN_MS later with one", () => {
    expect(startStampMs([], 1_000)).toBe(1_000)
    expect(startStampMs(effectiveWindows({ "1s": 5 }).windows, 1_000)).toBe(1_000 + START_MARGIN_MS)
    expect(startStampMs(effectiveWindows({ "1h": 100, "1s": 5 }).windows, 1_000)).toBe(1_000 + START_MARGIN_MS)
  })
})
