// Backpressure from the target as tables (docs/tag-policies.md, the section of that name): what a
// Retry-After names (seconds, an HTTP date, capped at an hour; nothing for 0, the past or garbage),
// which responses hold, and the hold after a refusal: the named time, else a backoff from 1 s doubling
// on each refusal while held or within a minute of the last hold up to 60 s, cleared by a 2xx; a
// refusal of a request already on its way when the hold began changes nothing.
import { describe, expect, it } from "vitest"
import {
  BACKOFF_MEMORY_MS, holdAfterRefusal, holdAfterSuccess, type HoldState, isRefusal, MAX_HOLD_MS, refusalRetryAfterMs,
  retryAfterUntilMs
} from "../../src/domain/gates/gateHold.ts"

const NOW = Date.parse("2030-01-14T17:20:00.000Z")

describe("retryAfterUntilMs", () => {
  it.each([
    ["2", NOW + 2_000],
    [" 120 ", NOW + 120_000],
    ["7200", NOW + MAX_HOLD_MS],
    ["0", null],
    ["-5", null],
    ["1.5", null],
    ["soon", null],
    ["Mon, 14 Jan 2030 17:20:30 GMT", NOW + 30_000],
    ["Mon, 14 Jan 2030 19:20:30 GMT", NOW + MAX_HOLD_MS],
    ["Mon, 14 Jan 2030 17:19:00 GMT", null],
    [undefined, null]
  ] as const)("%j → %s", (value, expected) => {
    expect(retryAfterUntilMs(value, NOW)).toBe(expected)
  })
})

describe("refusals", () => {
  it.each([[429, true], [503, true], [500, false], [200, false], [null, false]] as const)("%s holds: %s", (status, holds) => {
    expect(isRefusal(status)).toBe(holds)
  })

  it("only a refusal's Retry-After counts", () => {
    expect(refusalRetryAfterMs({ httpStatus: 429, responseHeaders: { "retry-after": "2" } }, NOW)).toBe(NOW + 2_000)
    expect(refusalRetryAfterMs({ httpStatus: 500, responseHeaders: { "retry-after": "2" } }, NOW)).toBeNull()
    expect(refusalRetryAfterMs({ httpStatus: 503, responseHeaders: null }, NOW)).toBeNull()
  })
})

const held = (sinceMs: number, untilMs: number, backoffMs: number): HoldState => ({ heldSinceMs: sinceMs, heldUntilMs: untilMs, backoffMs })
const backoffRefusal = (leftAtMs: number) => ({ retryAfterUntilMs: null, leftAtMs })

describe("holdAfterRefusal", () => {
  const rows: ReadonlyArray<readonly [string, HoldState | null, Parameters<typeof holdAfterRefusal>[1], HoldState | null]> = [
    ["Retry-After: held until the named time", null, { retryAfterUntilMs: NOW + 2_000, leftAtMs: NOW - 5 }, held(NOW, NOW + 2_000, 0)],
    ["Retry-After further than an hour: capped", null, { retryAfterUntilMs: NOW + 2 * MAX_HOLD_MS, leftAtMs: NOW }, held(NOW, NOW + MAX_HOLD_MS, 0)],
    ["a shorter Retry-After while held: no change", held(NOW - 100, NOW + 5_000, 0), { retryAfterUntilMs: NOW + 2_000, leftAtMs: NOW }, null],
    ["a longer Retry-After while held: longer, same start", held(NOW - 100, NOW + 1_000, 0), { retryAfterUntilMs: NOW + 2_000, leftAtMs: NOW }, held(NOW - 100, NOW + 2_000, 0)],
    ["no Retry-After, first refusal: 1 s", null, backoffRefusal(NOW - 5), held(NOW, NOW + 1_000, 1_000)],
    ["refused again within a minute of the last hold: doubled", held(NOW - 30_000, NOW - 29_000, 1_000), backoffRefusal(NOW - 5), held(NOW, NOW + 2_000, 2_000)],
    ["a minute after the last hold: from 1 s again", held(NOW - BACKOFF_MEMORY_MS - 2_000, NOW - BACKOFF_MEMORY_MS - 1, 8_000), backoffRefusal(NOW), held(NOW, NOW + 1_000, 1_000)],
    ["doubling stops at 60 s", held(NOW - 60_000, NOW - 10, 60_000), backoffRefusal(NOW), held(NOW, NOW + 60_000, 60_000)],
    ["refused while held, the request left after the hold began: doubled", held(NOW - 500, NOW + 500, 1_000), backoffRefusal(NOW - 100), held(NOW - 500, NOW + 2_000, 2_000)],
    ["refused while held, the request already on its way when it began: no change", held(NOW - 500, NOW + 500, 1_000), backoffRefusal(NOW - 600), null],
    ["after a 2xx cleared the backoff: from 1 s", held(NOW - 3_000, NOW - 1_000, 0), backoffRefusal(NOW), held(NOW, NOW + 1_000, 1_000)]
  ]
  it.each(rows)("%s", (_, previous, refusal, expected) => {
    expect(holdAfterRefusal(previous, refusal, NOW)).toEqual(expected)
  })
})

describe("holdAfterSuccess", () => {
  it("clears a backoff, and nothing else", () => {
    expect(holdAfterSuccess(held(NOW - 3_000, NOW - 1_000, 4_000))).toEqual(held(NOW - 3_000, NOW - 1_000, 0))
    expect(holdAfterSuccess(held(NOW - 3_000, NOW - 1_000, 0))).toBeNull()
    expect(holdAfterSuccess(null)).toBeNull()
  })
})
