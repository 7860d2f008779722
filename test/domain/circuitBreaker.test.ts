// The circuit breaker of an origin as a pure state machine (docs/protecting-targets.md "Circuit
// breaker"), as tables: which outcomes are failures; `failures` consecutive ones open it for the
// cooldown, an answer resets the count; open, outcomes of attempts already on their way change
// nothing; once the cooldown ends one node claims the single probe, whose answer closes the circuit
// and whose failure opens it again for twice as long (at most an hour); a probe refused before it
// was sent is given back; a probe whose node is gone may be claimed by another node, whose outcome
// then settles it. The last tests walk the whole cycle under Effect's TestClock.
import { it as effectIt } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import {
  circuitAfter, circuitAfterAll, type CircuitEvent, circuitPhase, type CircuitState, claimProbe, CLOSED, failureReason,
  MAX_COOLDOWN_MS, releaseProbe, verdictOf
} from "../../src/domain/gates/circuitBreaker.ts"

const NOW = Date.parse("2030-01-14T17:20:00.000Z")
const SETTINGS = { failures: 3, cooldownSeconds: 10 }
const fail = (atMs = NOW, reason = "HTTP 500"): CircuitEvent => ({ _tag: "Failure", atMs, reason })
const answer = (atMs = NOW): CircuitEvent => ({ _tag: "Answer", atMs })
const probed = (node: string, verdict: "failure" | "answer" | "unsent"): CircuitEvent => ({ _tag: "Probed", node, verdict, reason: "timeout" })
const open = (untilMs: number, cooldownMs: number, probe: CircuitState["probe"] = null): CircuitState => ({
  ...CLOSED, openedAtMs: untilMs - cooldownMs, reason: "HTTP 500", openUntilMs: untilMs, cooldownMs, probe
})

describe("verdictOf: what counts as a failure", () => {
  it.each([
    [{ httpStatus: 500, errorKind: null }, "failure"],
    [{ httpStatus: 502, errorKind: null }, "failure"],
    [{ httpStatus: 599, errorKind: null }, "failure"],
    [{ httpStatus: 503, errorKind: null }, "answer"],
    [{ httpStatus: 429, errorKind: null }, "answer"],
    [{ httpStatus: 404, errorKind: null }, "answer"],
    [{ httpStatus: 301, errorKind: null }, "answer"],
    [{ httpStatus: 200, errorKind: null }, "answer"],
    [{ httpStatus: null, errorKind: "timeout" }, "failure"],
    [{ httpStatus: null, errorKind: "connect_timeout" }, "failure"],
    [{ httpStatus: null, errorKind: "connection_refused" }, "failure"],
    [{ httpStatus: null, errorKind: "dns" }, "failure"],
    [{ httpStatus: null, errorKind: "connection_reset" }, "failure"],
    [{ httpStatus: null, errorKind: "tls" }, "failure"],
    [{ httpStatus: 200, errorKind: "body_read" }, "failure"],
    [{ httpStatus: null, errorKind: "invalid_request" }, "unsent"]
  ] as const)("%j → %s", (outcome, verdict) => {
    expect(verdictOf(outcome)).toBe(verdict)
  })

  it("the reason names the status or the error, at most 200 characters", () => {
    expect(failureReason({ httpStatus: 502, errorKind: null })).toBe("HTTP 502")
    expect(failureReason({ httpStatus: null, errorKind: "timeout", errorMessage: "no answer in 5 s" })).toBe("timeout: no answer in 5 s")
    expect(failureReason({ httpStatus: null, errorKind: "dns", errorMessage: "x".repeat(500) })).toHaveLength(200)
  })
})

describe("circuitAfter", () => {
  const rows: ReadonlyArray<readonly [string, CircuitState, CircuitEvent, CircuitState, boolean]> = [
    ["a failure while closed counts", CLOSED, fail(), { ...CLOSED, failures: 1, lastFailureAtMs: NOW }, false],
    ["the third consecutive failure opens it for the cooldown",
      { ...CLOSED, failures: 2, lastFailureAtMs: NOW - 5 }, fail(NOW, "timeout"),
      { ...CLOSED, openedAtMs: NOW, reason: "timeout", openUntilMs: NOW + 10_000, cooldownMs: 10_000 }, true],
    ["an answer resets the count", { ...CLOSED, failures: 2, lastFailureAtMs: NOW - 5 }, answer(), CLOSED, false],
    ["an answer that came before the last failure does not reset it",
      { ...CLOSED, failures: 2, lastFailureAtMs: NOW }, answer(NOW - 1), { ...CLOSED, failures: 2, lastFailureAtMs: NOW }, false],
    ["an answer with no failure counted changes nothing", CLOSED, answer(), CLOSED, false],
    ["open: a failure of an attempt already on its way changes nothing", open(NOW + 5_000, 10_000), fail(), open(NOW + 5_000, 10_000), false],
    ["open: an answer of one changes nothing either", open(NOW + 5_000, 10_000), answer(), open(NOW + 5_000, 10_000), false],
    ["probing: an answer of another attempt does not close it", open(NOW - 1, 10_000, { node: "a", sinceMs: NOW - 1 }), answer(),
      open(NOW - 1, 10_000, { node: "a", sinceMs: NOW - 1 }), false],
    ["the probe's answer closes it and resets the count (when and why it opened stay on record)",
      open(NOW - 1, 10_000, { node: "a", sinceMs: NOW - 1 }), probed("a", "answer"),
      { ...CLOSED, openedAtMs: NOW - 10_001, reason: "HTTP 500" }, false],
    ["the probe's failure opens it again for twice the cooldown",
      open(NOW - 1, 10_000, { node: "a", sinceMs: NOW - 1 }), probed("a", "failure"),
      { ...CLOSED, openedAtMs: NOW, reason: "timeout", openUntilMs: NOW + 20_000, cooldownMs: 20_000 }, true],
    ["doubling stops at one hour",
      open(NOW - 1, 2_400_000, { node: "a", sinceMs: NOW - 1 }), probed("a", "failure"),
      { ...CLOSED, openedAtMs: NOW, reason: "timeout", openUntilMs: NOW + MAX_COOLDOWN_MS, cooldownMs: MAX_COOLDOWN_MS }, true],
    ["a probe refused before it was sent is given back", open(NOW - 1, 10_000, { node: "a", sinceMs: NOW - 1 }), probed("a", "unsent"),
      open(NOW - 1, 10_000), false],
    ["the outcome of a probe another node took over changes nothing",
      open(NOW - 1, 10_000, { node: "b", sinceMs: NOW - 1 }), probed("a", "failure"), open(NOW - 1, 10_000, { node: "b", sinceMs: NOW - 1 }), false]
  ]
  it.each(rows)("%s", (_, before, event, after, opened) => {
    expect(circuitAfter(before, event, SETTINGS, NOW)).toEqual({ state: after, opened })
  })

  it("a batch of outcomes applies in order: a failure, an answer, three failures open it once", () => {
    const result = circuitAfterAll(CLOSED, [fail(NOW - 50), answer(NOW - 40), fail(NOW - 30), fail(NOW - 20), fail(NOW - 10), fail(NOW)], SETTINGS, NOW)
    expect(result.opened).toBe(true)
    expect(circuitPhase(result.state, NOW)).toBe("open")
    expect(result.state.openUntilMs).toBe(NOW + 10_000)
  })

  it("a circuit opened from closed uses the policy's cooldown again (a success came in between)", () => {
    const reopened = circuitAfterAll({ ...CLOSED, openedAtMs: NOW - 60_000, reason: "HTTP 500" }, [fail(), fail(), fail()], SETTINGS, NOW)
    expect(reopened.state.cooldownMs).toBe(10_000)
  })
})

describe("the probe", () => {
  it.each([
    ["closed: nothing to claim", CLOSED, "a", false, null],
    ["open: not yet", open(NOW + 1, 10_000), "a", false, null],
    ["probing, unclaimed: granted", open(NOW, 10_000), "a", false, { node: "a", sinceMs: NOW }],
    ["held by this node: still its own", open(NOW - 5, 10_000, { node: "a", sinceMs: NOW - 5 }), "a", false, { node: "a", sinceMs: NOW - 5 }],
    ["held by a live node: refused", open(NOW - 5, 10_000, { node: "b", sinceMs: NOW - 5 }), "a", false, null],
    ["held by a node that is gone: taken over", open(NOW - 5, 10_000, { node: "b", sinceMs: NOW - 5 }), "a", true, { node: "a", sinceMs: NOW }]
  ] as const)("%s", (_, state, node, holderGone, probe) => {
    const claimed = claimProbe(state, node, holderGone, NOW)
    expect(claimed === null ? null : claimed.probe).toEqual(probe)
  })

  it("only its holder gives it back", () => {
    const held = open(NOW - 5, 10_000, { node: "a", sinceMs: NOW - 5 })
    expect(releaseProbe(held, "b")).toBeNull()
    expect(releaseProbe(held, "a")?.probe).toBeNull()
  })
})

describe("under a TestClock: the whole cycle", () => {
  effectIt.effect("opens, probes after 10 s, fails, probes after 20 s, closes; then counts from zero", () =>
    Effect.gen(function*() {
      const now = Clock.currentTimeMillis
      let state = CLOSED
      const apply = (event: CircuitEvent) =>
        Effect.map(now, (nowMs) => {
          const next = circuitAfter(state, event, SETTINGS, nowMs)
          state = next.state
          return next.opened
        })
      const phase = Effect.map(now, (nowMs) => circuitPhase(state, nowMs))

      for (let i = 0; i < 2; i++) expect(yield* apply(fail(yield* now))).toBe(false)
      expect(yield* apply(fail(yield* now))).toBe(true)
      expect(yield* phase).toBe("open")
      yield* TestClock.adjust(9_999)
      expect(yield* phase).toBe("open")
      expect(claimProbe(state, "a", false, yield* now)).toBeNull()
      yield* TestClock.adjust(1)
      expect(yield* phase).toBe("probing")
      state = claimProbe(state, "a", false, yield* now)!
      expect(claimProbe(state, "b", false, yield* now)).toBeNull()
      expect(yield* apply(probed("a", "failure"))).toBe(true)
      yield* TestClock.adjust(19_999)
      expect(yield* phase).toBe("open")
      yield* TestClock.adjust(1)
      expect(yield* phase).toBe("probing")
      // the first claimer died: another node takes the probe over, and its answer closes the circuit
      state = claimProbe(state, "a", false, yield* now)!
      state = claimProbe(state, "b", true, yield* now)!
      expect(yield* apply(probed("b", "answer"))).toBe(false)
      expect(yield* phase).toBe("closed")
      expect(state.failures).toBe(0)
      expect(yield* apply(fail(yield* now))).toBe(false)
      expect(state.failures).toBe(1)
    }))
})
