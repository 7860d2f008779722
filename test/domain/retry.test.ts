// Retry policies as tables: headers → policy, project patches, precedence and tag merge,
// retryOn classification, and the outcome of an attempt (succeeded / retry at / dead letter).
import { describe, expect, it } from "vitest"
import { ERROR_KINDS, isErrorKind } from "../../src/domain/errorKind.ts"
import type { ErrorKind } from "../../src/domain/errorKind.ts"
import {
  decideOutcome,
  effectivePolicy,
  isRetryable,
  isSuccess,
  MAX_RETRY_DELAY_MS,
  mergeTagRetryPolicies,
  projectPolicyFromStored,
  parseRetryHeaders,
  PROJECT_DEFAULT_RETRY,
  projectPolicyView,
  retryDelayMs,
  TRIGGER_DEFAULT_RETRY,
  validateRetryPolicyPatch
} from "../../src/domain/retry.ts"
import type { AttemptResult, Outcome, RetryOn, RetryPolicy } from "../../src/domain/retry.ts"

const policy = (over: Partial<RetryPolicy> = {}): RetryPolicy => ({ ...TRIGGER_DEFAULT_RETRY, ...over })
const status = (httpStatus: number): AttemptResult => ({ _tag: "Response", httpStatus })
const noResponse = (errorKind: ErrorKind): AttemptResult => ({ _tag: "NoResponse", errorKind })

describe("defaults (docs/retries.md)", () => {
  it("project default", () => {
    expect(PROJECT_DEFAULT_RETRY).toEqual({
      strategy: "exponential", maxAttempts: 3, initialDelaySeconds: 30, maxDelaySeconds: null, jitter: false, retryOn: "network_only"
    })
  })
  it("per-trigger default", () => {
    expect(TRIGGER_DEFAULT_RETRY).toEqual({
      strategy: "exponential", maxAttempts: 3, initialDelaySeconds: 30, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network"
    })
  })
  it("error kinds are the documented list", () => {
    expect(ERROR_KINDS).toEqual([
      "dns", "connect_timeout", "connection_refused", "unreachable", "tls", "connection_reset", "timeout", "protocol",
      "body_read", "invalid_request", "unknown"
    ])
    expect(isErrorKind("tls")).toBe(true)
    expect(isErrorKind("TLS")).toBe(false)
  })
})

describe("parseRetryHeaders", () => {
  const rows: ReadonlyArray<readonly [headers: Record<string, string>, expected: RetryPolicy | null | string]> = [
    [{}, null],
    [{ "ttr-url": "https://x.test", "ttr-retry": "5" }, null],
    [{ "ttr-retry-strategy": "exponential" }, TRIGGER_DEFAULT_RETRY],
    [{ "ttr-retry-strategy": "fixed" }, policy({ strategy: "fixed" })],
    [{ "ttr-retry-strategy": "none" }, policy({ strategy: "none", maxAttempts: 1 })],
    [{ "ttr-retry-strategy": "none", "ttr-retry-max-attempts": "5" }, policy({ strategy: "none", maxAttempts: 1 })],
    [{ "ttr-retry-max-attempts": "1" }, policy({ maxAttempts: 1 })],
    [{ "ttr-retry-max-attempts": " 10 " }, policy({ maxAttempts: 10 })],
    [{ "ttr-retry-max-attempts": "2147483647" }, policy({ maxAttempts: 2_147_483_647 })],
    [{ "ttr-retry-initial-delay": "0" }, policy({ initialDelaySeconds: 0 })],
    [{ "ttr-retry-initial-delay": "86400" }, policy({ initialDelaySeconds: 86_400 })],
    [{ "ttr-retry-max-delay": "120" }, policy({ maxDelaySeconds: 120 })],
    [{ "ttr-retry-max-delay": "0" }, policy({ maxDelaySeconds: 0 })],
    [{ "ttr-retry-jitter": "true" }, policy({ jitter: true })],
    [{ "ttr-retry-jitter": "false" }, TRIGGER_DEFAULT_RETRY],
    [{ "ttr-retry-on": "network_only" }, policy({ retryOn: "network_only" })],
    [{ "ttr-retry-on": "non_2xx" }, policy({ retryOn: "non_2xx" })],
    [
      {
        "ttr-retry-strategy": "fixed", "ttr-retry-max-attempts": "7", "ttr-retry-initial-delay": "5",
        "ttr-retry-max-delay": "60", "ttr-retry-jitter": "true", "ttr-retry-on": "non_2xx"
      },
      { strategy: "fixed", maxAttempts: 7, initialDelaySeconds: 5, maxDelaySeconds: 60, jitter: true, retryOn: "non_2xx" }
    ],
    [{ "ttr-retry-strategy": "Fixed" }, "Invalid ttr-retry-strategy: Fixed (one of none, fixed, exponential)"],
    [{ "ttr-retry-strategy": "" }, "Invalid ttr-retry-strategy:  (one of none, fixed, exponential)"],
    [{ "ttr-retry-max-attempts": "abc" }, "Invalid ttr-retry-max-attempts: abc (an integer from 1 to 2147483647)"],
    [{ "ttr-retry-max-attempts": "0" }, "Invalid ttr-retry-max-attempts: 0 (an integer from 1 to 2147483647)"],
    [{ "ttr-retry-max-attempts": "-1" }, "Invalid ttr-retry-max-attempts: -1 (an integer from 1 to 2147483647)"],
    [{ "ttr-retry-max-attempts": "2.5" }, "Invalid ttr-retry-max-attempts: 2.5 (an integer from 1 to 2147483647)"],
    [{ "ttr-retry-max-attempts": "1e3" }, "Invalid ttr-retry-max-attempts: 1e3 (an integer from 1 to 2147483647)"],
    [{ "ttr-retry-max-attempts": "2147483648" }, "Invalid ttr-retry-max-attempts: 2147483648 (an integer from 1 to 2147483647)"],
    [{ "ttr-retry-initial-delay": "30s" }, "Invalid ttr-retry-initial-delay: 30s (whole seconds from 0 to 86400)"],
    [{ "ttr-retry-initial-delay": "86401" }, "Invalid ttr-retry-initial-delay: 86401 (whole seconds from 0 to 86400)"],
    [{ "ttr-retry-max-delay": "-5" }, "Invalid ttr-retry-max-delay: -5 (whole seconds from 0 to 86400)"],
    [{ "ttr-retry-max-delay": "none" }, "Invalid ttr-retry-max-delay: none (whole seconds from 0 to 86400)"],
    [{ "ttr-retry-jitter": "yes" }, "Invalid ttr-retry-jitter: yes (true or false)"],
    [{ "ttr-retry-jitter": "TRUE" }, "Invalid ttr-retry-jitter: TRUE (true or false)"],
    [{ "ttr-retry-on": "5xx" }, "Invalid ttr-retry-on: 5xx (one of network_only, 5xx_and_network, non_2xx)"],
    // checked in the documented header order: strategy first
    [{ "ttr-retry-on": "bad", "ttr-retry-strategy": "bad" }, "Invalid ttr-retry-strategy: bad (one of none, fixed, exponential)"],
    // an invalid companion header is still an error with strategy none
    [{ "ttr-retry-strategy": "none", "ttr-retry-max-attempts": "x" }, "Invalid ttr-retry-max-attempts: x (an integer from 1 to 2147483647)"]
  ]
  it.each(rows)("%j", (headers, expected) => {
    const result = parseRetryHeaders((name) => headers[name], "ttr")
    expect(result).toEqual(
      typeof expected === "string" ? { _tag: "Err", message: expected } : { _tag: "Ok", policy: expected }
    )
  })

  it("uses the configured prefix in header names and messages", () => {
    const headers: Record<string, string> = { "acme-retry-jitter": "maybe", "ttr-retry-jitter": "true" }
    expect(parseRetryHeaders((n) => headers[n], "acme")).toEqual({
      _tag: "Err", message: "Invalid acme-retry-jitter: maybe (true or false)"
    })
    expect(parseRetryHeaders((n) => ({ "ttr-retry-jitter": "true" })[n], "acme")).toEqual({ _tag: "Ok", policy: null })
  })
})

describe("validateRetryPolicyPatch (PUT /project/retry-policy)", () => {
  const current = PROJECT_DEFAULT_RETRY
  const rows: ReadonlyArray<readonly [patch: unknown, expected: Partial<RetryPolicy> | string]> = [
    [{}, {}],
    [{ unknownField: 1, retry: "x" }, {}],
    [{ retryStrategy: "fixed" }, { strategy: "fixed" }],
    [{ retryStrategy: "none" }, { strategy: "none" }],
    [{ retryMaxAttempts: 10 }, { maxAttempts: 10 }],
    [{ retryMaxAttempts: 1 }, { maxAttempts: 1 }],
    [{ retryInitialDelaySeconds: 0 }, { initialDelaySeconds: 0 }],
    [{ retryInitialDelaySeconds: 86_400 }, { initialDelaySeconds: 86_400 }],
    [{ retryMaxDelaySeconds: 600 }, { maxDelaySeconds: 600 }],
    [{ retryMaxDelaySeconds: null }, { maxDelaySeconds: null }],
    [{ retryJitter: true }, { jitter: true }],
    [{ retryOn: "non_2xx" }, { retryOn: "non_2xx" }],
    [
      { retryStrategy: "fixed", retryMaxAttempts: 5, retryInitialDelaySeconds: 10, retryMaxDelaySeconds: 20, retryJitter: true, retryOn: "5xx_and_network" },
      { strategy: "fixed", maxAttempts: 5, initialDelaySeconds: 10, maxDelaySeconds: 20, jitter: true, retryOn: "5xx_and_network" }
    ],
    [null, "Retry policy must be a JSON object"],
    [[], "Retry policy must be a JSON object"],
    ["fixed", "Retry policy must be a JSON object"],
    [{ retryStrategy: "linear" }, "retryStrategy must be one of none, fixed, exponential"],
    [{ retryStrategy: null }, "retryStrategy must be one of none, fixed, exponential"],
    [{ retryMaxAttempts: 0 }, "retryMaxAttempts must be an integer from 1 to 2147483647"],
    [{ retryMaxAttempts: null }, "retryMaxAttempts must be an integer from 1 to 2147483647"],
    [{ retryMaxAttempts: 2.5 }, "retryMaxAttempts must be an integer from 1 to 2147483647"],
    [{ retryMaxAttempts: "3" }, "retryMaxAttempts must be an integer from 1 to 2147483647"],
    [{ retryInitialDelaySeconds: -1 }, "retryInitialDelaySeconds must be an integer from 0 to 86400"],
    [{ retryInitialDelaySeconds: 86_401 }, "retryInitialDelaySeconds must be an integer from 0 to 86400"],
    [{ retryInitialDelaySeconds: null }, "retryInitialDelaySeconds must be an integer from 0 to 86400"],
    [{ retryMaxDelaySeconds: 86_401 }, "retryMaxDelaySeconds must be null or an integer from 0 to 86400"],
    [{ retryMaxDelaySeconds: "60" }, "retryMaxDelaySeconds must be null or an integer from 0 to 86400"],
    [{ retryJitter: "true" }, "retryJitter must be true or false"],
    [{ retryJitter: null }, "retryJitter must be true or false"],
    [{ retryOn: "all" }, "retryOn must be one of network_only, 5xx_and_network, non_2xx"],
    // first bad field in the documented field order
    [{ retryOn: "bad", retryMaxAttempts: 0 }, "retryMaxAttempts must be an integer from 1 to 2147483647"]
  ]
  it.each(rows)("%j", (patch, expected) => {
    expect(validateRetryPolicyPatch(current, patch)).toEqual(
      typeof expected === "string" ? { _tag: "Err", message: expected } : { _tag: "Ok", policy: { ...current, ...expected } }
    )
  })

  it("patches the stored value, not the default", () => {
    const stored = policy({ strategy: "fixed", maxAttempts: 9, retryOn: "non_2xx" })
    expect(validateRetryPolicyPatch(stored, { retryJitter: true })).toEqual({ _tag: "Ok", policy: { ...stored, jitter: true } })
  })

  it("projectPolicyView uses the documented field names", () => {
    expect(projectPolicyView(PROJECT_DEFAULT_RETRY)).toEqual({
      retryStrategy: "exponential", retryMaxAttempts: 3, retryInitialDelaySeconds: 30, retryMaxDelaySeconds: null,
      retryJitter: false, retryOn: "network_only"
    })
  })
})

describe("precedence and tag merge (docs/retries.md)", () => {
  const project = PROJECT_DEFAULT_RETRY
  const trigger = policy({ maxAttempts: 5 })
  const tagA = policy({ strategy: "fixed", maxAttempts: 4, initialDelaySeconds: 10, maxDelaySeconds: 100, retryOn: "non_2xx" })
  const tagB = policy({ strategy: "exponential", maxAttempts: 2, initialDelaySeconds: 60, maxDelaySeconds: 30, retryOn: "5xx_and_network" })
  const tagNone = policy({ strategy: "none", maxAttempts: 1 })

  const rows: ReadonlyArray<readonly [string, RetryPolicy | null, ReadonlyArray<RetryPolicy>, RetryPolicy]> = [
    ["per-trigger policy wins over tags and project", trigger, [tagA, tagB], trigger],
    ["per-trigger strategy none still wins", policy({ strategy: "none", maxAttempts: 1 }), [tagA], policy({ strategy: "none", maxAttempts: 1 })],
    ["no trigger, no tags → project", null, [], project],
    ["tags whose policies say none → project", null, [tagNone, tagNone], project],
    ["one tag policy replaces the project", null, [tagA], tagA],
    ["none among opinions is ignored", null, [tagNone, tagA], tagA]
  ]
  it.each(rows)("%s", (_, triggerPolicy, tagPolicies, expected) => {
    expect(effectivePolicy({ trigger: triggerPolicy, tagPolicies, project })).toEqual(expected)
  })

  const mergeRows: ReadonlyArray<readonly [string, ReadonlyArray<RetryPolicy>, RetryPolicy | undefined]> = [
    ["empty", [], undefined],
    ["only none", [tagNone], undefined],
    [
      "fewest attempts, longest delays, most restrictive retryOn, exponential over fixed",
      [tagA, tagB],
      { strategy: "exponential", maxAttempts: 2, initialDelaySeconds: 60, maxDelaySeconds: 100, jitter: false, retryOn: "5xx_and_network" }
    ],
    ["order does not matter", [tagB, tagA], mergeTagRetryPolicies([tagA, tagB])],
    ["unlimited attempts lose to a limit", [policy({ maxAttempts: null }), policy({ maxAttempts: 6 })], policy({ maxAttempts: 6 })],
    ["all unlimited stays unlimited", [policy({ maxAttempts: null }), policy({ maxAttempts: null })], policy({ maxAttempts: null })],
    ["no cap is the longest cap", [policy({ maxDelaySeconds: 10 }), policy({ maxDelaySeconds: null })], policy({ maxDelaySeconds: null })],
    ["network_only is the most restrictive", [policy({ retryOn: "non_2xx" }), policy({ retryOn: "network_only" })], policy({ retryOn: "network_only" })],
    ["two fixed stay fixed", [policy({ strategy: "fixed" }), policy({ strategy: "fixed", initialDelaySeconds: 45 })], policy({ strategy: "fixed", initialDelaySeconds: 45 })],
    ["jitter when any asks", [policy({ jitter: false }), policy({ jitter: true })], policy({ jitter: true })]
  ]
  it.each(mergeRows)("merge: %s", (_, policies, expected) => {
    expect(mergeTagRetryPolicies(policies)).toEqual(expected)
  })
})

describe("isSuccess / isRetryable (docs/retries.md)", () => {
  type Row = readonly [AttemptResult, success: boolean, networkOnly: boolean, fiveXx: boolean, non2xx: boolean]
  const rows: ReadonlyArray<Row> = [
    [status(200), true, false, false, false],
    [status(204), true, false, false, false],
    [status(299), true, false, false, false],
    [status(100), false, false, false, true],
    [status(301), false, false, false, true],
    [status(304), false, false, false, true],
    [status(400), false, false, false, true],
    [status(404), false, false, false, true],
    [status(429), false, false, false, true],
    [status(500), false, false, true, true],
    [status(503), false, false, true, true],
    [status(599), false, false, true, true],
    ...ERROR_KINDS.filter((k) => k !== "invalid_request").map((k): Row => [noResponse(k), false, true, true, true]),
    [noResponse("invalid_request"), false, false, false, false]
  ]
  it.each(rows)("%j → success %s, network_only %s, 5xx_and_network %s, non_2xx %s", (result, success, a, b, c) => {
    expect(isSuccess(result)).toBe(success)
    const retryOns: ReadonlyArray<RetryOn> = ["network_only", "5xx_and_network", "non_2xx"]
    expect(retryOns.map((r) => isRetryable(r, result))).toEqual([a, b, c])
  })
})

describe("decideOutcome (docs/retries.md)", () => {
  const retry = (delayMs: number): Outcome => ({ _tag: "RetryAt", delayMs })
  const DEAD: Outcome = { _tag: "DeadLetter" }
  const OK: Outcome = { _tag: "Succeeded" }
  const s = (seconds: number) => seconds * 1_000

  type Row = readonly [string, RetryPolicy, attempt: number, AttemptResult, random: number, Outcome]
  const rows: ReadonlyArray<Row> = [
    ["2xx succeeds", TRIGGER_DEFAULT_RETRY, 1, status(200), 0.3, OK],
    ["2xx on the last attempt succeeds", TRIGGER_DEFAULT_RETRY, 3, status(201), 0.3, OK],
    ["2xx with strategy none succeeds", policy({ strategy: "none", maxAttempts: 1 }), 1, status(200), 0, OK],
    // defaults: attempt 2 after 30 s, attempt 3 after a further 60 s, then dead letter
    ["defaults: attempt 1 fails → 30 s", TRIGGER_DEFAULT_RETRY, 1, status(503), 0, retry(s(30))],
    ["defaults: attempt 2 fails → 60 s", TRIGGER_DEFAULT_RETRY, 2, noResponse("timeout"), 0, retry(s(60))],
    ["defaults: attempt 3 fails → dead letter", TRIGGER_DEFAULT_RETRY, 3, status(503), 0, DEAD],
    ["exponential keeps doubling", policy({ maxAttempts: 10 }), 5, status(500), 0, retry(s(30 * 16))],
    ["exponential capped by max delay", policy({ maxAttempts: 10, maxDelaySeconds: 100 }), 3, status(500), 0, retry(s(100))],
    ["cap below the initial delay caps the first delay", policy({ maxDelaySeconds: 10 }), 1, status(500), 0, retry(s(10))],
    ["fixed uses the initial delay every time", policy({ strategy: "fixed", maxAttempts: 10, initialDelaySeconds: 45 }), 7, status(500), 0, retry(s(45))],
    ["fixed ignores max delay", policy({ strategy: "fixed", initialDelaySeconds: 45, maxDelaySeconds: 5 }), 1, status(500), 0, retry(s(45))],
    ["zero delay retries at once", policy({ initialDelaySeconds: 0 }), 1, status(500), 0, retry(0)],
    ["strategy none never retries", policy({ strategy: "none", maxAttempts: 5 }), 1, status(500), 0, DEAD],
    ["max attempts 1 never retries", policy({ maxAttempts: 1 }), 1, noResponse("dns"), 0, DEAD],
    ["unlimited attempts keep retrying", policy({ maxAttempts: null, maxDelaySeconds: 3600 }), 1_000, status(500), 0, retry(s(3600))],
    ["beyond max attempts is dead (defensive)", TRIGGER_DEFAULT_RETRY, 4, status(500), 0, DEAD],
    ["network_only: 500 is a dead letter", PROJECT_DEFAULT_RETRY, 1, status(500), 0, DEAD],
    ["network_only: connection refused retries", PROJECT_DEFAULT_RETRY, 1, noResponse("connection_refused"), 0, retry(s(30))],
    ["5xx_and_network: 404 is a dead letter", TRIGGER_DEFAULT_RETRY, 1, status(404), 0, DEAD],
    ["non_2xx: 404 retries", policy({ retryOn: "non_2xx" }), 1, status(404), 0, retry(s(30))],
    ["invalid_request is never retried", policy({ retryOn: "non_2xx" }), 1, noResponse("invalid_request"), 0, DEAD],
    // jitter multiplies each delay by 0.5 + random
    ["jitter, random 0 → ×0.5", policy({ jitter: true }), 1, status(500), 0, retry(s(15))],
    ["jitter, random 0.5 → ×1", policy({ jitter: true }), 2, status(500), 0.5, retry(s(60))],
    ["jitter, random 0.999 → ×1.499", policy({ jitter: true }), 1, status(500), 0.999, retry(44_970)],
    ["jitter applies to fixed delays", policy({ strategy: "fixed", maxAttempts: 10, initialDelaySeconds: 10, jitter: true }), 4, status(500), 0.25, retry(s(7.5))],
    ["jitter applies after the cap", policy({ maxAttempts: 10, maxDelaySeconds: 100, jitter: true }), 5, status(500), 0, retry(s(50))],
    ["jitter rounds to whole ms", policy({ initialDelaySeconds: 1, jitter: true }), 1, status(500), 0.1234567, retry(623)],
    // no overflow however many attempts: the delay stops at the hard ceiling
    ["huge attempt number, uncapped", policy({ maxAttempts: null }), 1e9, status(500), 0, retry(MAX_RETRY_DELAY_MS)],
    ["huge attempt number, initial 1 day", policy({ maxAttempts: null, initialDelaySeconds: 86_400 }), Number.MAX_SAFE_INTEGER, status(500), 0, retry(MAX_RETRY_DELAY_MS)]
  ]
  it.each(rows)("%s", (_, p, attempt, result, random, expected) => {
    expect(decideOutcome({ policy: p, attempt, result, random })).toEqual(expected)
  })

  it("delays of an uncapped exponential policy never decrease and stay finite", () => {
    const p = policy({ maxAttempts: null, initialDelaySeconds: 1 })
    let previous = 0
    for (let attempt = 1; attempt <= 2000; attempt++) {
      const d = retryDelayMs(p, attempt, 0)
      expect(Number.isSafeInteger(d)).toBe(true)
      expect(d).toBeGreaterThanOrEqual(previous)
      previous = d
    }
    expect(previous).toBe(MAX_RETRY_DELAY_MS)
  })
})

describe("projectPolicyFromStored: the stored value or its JSON text (as delivery reads it)", () => {
  it("the text reads as its value, whichever text came before; text that is not JSON reads as no fields set", () => {
    const a = { retryMaxAttempts: 7, retryOn: "non_2xx" }
    const b = { retryStrategy: "fixed", retryInitialDelaySeconds: 5, retryJitter: true }
    for (const stored of [a, b, a, a, b]) {
      expect(projectPolicyFromStored(JSON.stringify(stored))).toEqual(projectPolicyFromStored(stored))
    }
    expect(projectPolicyFromStored(JSON.stringify(a)).maxAttempts).toBe(7)
    expect(projectPolicyFromStored("{not json")).toEqual(projectPolicyFromStored({}))
    expect(projectPolicyFromStored("null")).toEqual(projectPolicyFromStored(null))
  })
})
