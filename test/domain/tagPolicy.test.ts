// Tag policies as tables: the shape of POST/PUT bodies (empty 400), the documented validation messages and
// their order, create versus update (PUT merges, then validates the result), null handling and
// defaults, the view, and what a policy means for delivery (retry opinion, gating, timeout).
import { describe, expect, it } from "vitest"
import { effectivePolicy, PROJECT_DEFAULT_RETRY, TRIGGER_DEFAULT_RETRY } from "../../src/domain/retry.ts"
import type { RetryPolicy } from "../../src/domain/retry.ts"
import {
  decodeTagPolicyBody,
  isGating,
  mergeTagPolicyUpdate,
  newTagPolicyFields,
  requestTimeoutFor,
  tagPolicyView,
  tagRetryPolicies,
  tagRetryPolicy
} from "../../src/domain/tagPolicy.ts"
import type { StoredTagPolicy, TagPolicyFields } from "../../src/domain/tagPolicy.ts"
import { validateTagPolicy } from "../../src/domain/tagPolicyValidation.ts"

/** What POST answers for a body: "shape" (empty 400), "ok", or the validation message. */
const postOutcome = (json: unknown): string => {
  const decoded = decodeTagPolicyBody(json, "create")
  if (decoded._tag === "Shape") return "shape"
  const result = validateTagPolicy(newTagPolicyFields(decoded.body), "create")
  return result._tag === "Ok" ? "ok" : result.message
}

/** What PUT answers for a body over a stored policy. */
const putOutcome = (stored: TagPolicyFields, json: unknown): string => {
  const decoded = decodeTagPolicyBody(json, "update")
  if (decoded._tag === "Shape") return "shape"
  const result = validateTagPolicy(mergeTagPolicyUpdate(stored, decoded.body), "update")
  return result._tag === "Ok" ? "ok" : result.message
}

/** A stored policy: everything unset except the tag and the default attempt count, then `over`. */
const fields = (over: Partial<TagPolicyFields> = {}): TagPolicyFields => ({
  tag: "api",
  maxConcurrent: null,
  requestTimeoutSeconds: null,
  throughput: null,
  retryStrategy: null,
  retryMaxAttempts: 3,
  retryInitialDelaySeconds: null,
  retryMaxDelaySeconds: null,
  retryOn: null,
  ...over
})

const created = (json: Record<string, unknown>): TagPolicyFields => {
  const decoded = decodeTagPolicyBody(json, "create")
  if (decoded._tag === "Shape") throw new Error(`shape: ${decoded.reason}`)
  return newTagPolicyFields(decoded.body)
}

const INVALID_TAG = "Invalid tag (only a-z 0-9 _ - allowed, max 50 chars)"
const NOTHING_SPECIFIED = "At least one of throughput, concurrency, timeout, or retry strategy must be specified"
const TIMEOUT = "requestTimeoutSeconds must be between 1 and 3600"
const MAX_CONCURRENT = "maxConcurrent must be ≥ 1"
const WINDOWS = "At most 8 throughput windows per policy"
const rate = (w: string) => `Throughput rate for '${w}' must be a finite number ≥ 0`
const effective = (w: string, r: number) => `Effective window for '${w}' at rate ${r} exceeds the 30-day maximum`
const STRETCH_NOTE = " (rates below 1 stretch the window by 1/rate)"
const MAX_ATTEMPTS = "retryMaxAttempts must be ≥ 1 (or null for unlimited)"
const INITIAL_REQUIRED = "retryInitialDelaySeconds is required (≥0) when retryStrategy is 'fixed' or 'exponential'"
const MAX_DELAY_NEGATIVE = "retryMaxDelaySeconds must be ≥ 0"
const INITIAL_MAX = "retryInitialDelaySeconds must be ≤ 86400 (1 day)"
const MAX_DELAY_MAX = "retryMaxDelaySeconds must be ≤ 86400 (1 day)"

const windows = (n: number): Record<string, number> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${i + 1}s`, 1]))

describe("shape: 400 with an empty body (docs/tag-policies.md)", () => {
  const rows: ReadonlyArray<readonly [what: string, body: unknown]> = [
    ["null body", null],
    ["array body", [{ tag: "a", maxConcurrent: 1 }]],
    ["string body", "tag"],
    ["number body", 5],
    ["tag missing on POST", { maxConcurrent: 1 }],
    ["empty object on POST", {}],
    ["tag null", { tag: null, maxConcurrent: 1 }],
    ["tag a number", { tag: 5, maxConcurrent: 1 }],
    ["tag an array", { tag: ["a"], maxConcurrent: 1 }],
    ["maxConcurrent a string", { tag: "a", maxConcurrent: "2" }],
    ["maxConcurrent a fraction", { tag: "a", maxConcurrent: 1.5 }],
    ["maxConcurrent a boolean", { tag: "a", maxConcurrent: true }],
    ["maxConcurrent beyond 32 bits", { tag: "a", maxConcurrent: 2_147_483_648 }],
    ["maxConcurrent 1e400 (Infinity)", JSON.parse('{"tag":"a","maxConcurrent":1e400}')],
    ["requestTimeoutSeconds a string", { tag: "a", requestTimeoutSeconds: "30" }],
    ["requestTimeoutSeconds a fraction", { tag: "a", requestTimeoutSeconds: 29.5 }],
    ["throughput a string", { tag: "a", throughput: "10/s" }],
    ["throughput an array", { tag: "a", throughput: [{ "1s": 1 }] }],
    ["throughput a number", { tag: "a", throughput: 10 }],
    ["window 1w", { tag: "a", throughput: { "1w": 1 } }],
    ["window 1.5s", { tag: "a", throughput: { "1.5s": 1 } }],
    ["window s", { tag: "a", throughput: { s: 1 } }],
    ["window empty", { tag: "a", throughput: { "": 1 } }],
    ["window 0s", { tag: "a", throughput: { "0s": 1 } }],
    ["window 01s", { tag: "a", throughput: { "01s": 1 } }],
    ["window 1S", { tag: "a", throughput: { "1S": 1 } }],
    ["window ' 1s'", { tag: "a", throughput: { " 1s": 1 } }],
    ["window 10", { tag: "a", throughput: { "10": 1 } }],
    ["window -1s", { tag: "a", throughput: { "-1s": 1 } }],
    ["a malformed window after a good one", { tag: "a", throughput: { "1s": 1, "1w": 1 } }],
    ["rate a string", { tag: "a", throughput: { "1s": "10" } }],
    ["rate null", { tag: "a", throughput: { "1s": null } }],
    ["rate a boolean", { tag: "a", throughput: { "1s": true } }],
    ["rate an object", { tag: "a", throughput: { "1s": { per: 1 } } }],
    ["unknown retryStrategy", { tag: "a", retryStrategy: "linear" }],
    ["retryStrategy in capitals", { tag: "a", retryStrategy: "FIXED" }],
    ["retryStrategy a number", { tag: "a", retryStrategy: 1 }],
    ["retryMaxAttempts a string", { tag: "a", retryStrategy: "none", retryMaxAttempts: "3" }],
    ["retryMaxAttempts a fraction", { tag: "a", retryStrategy: "none", retryMaxAttempts: 2.5 }],
    ["retryInitialDelaySeconds a string", { tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: "30" }],
    ["retryInitialDelaySeconds a fraction", { tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 0.5 }],
    ["retryMaxDelaySeconds a string", { tag: "a", retryStrategy: "none", retryMaxDelaySeconds: "60" }],
    ["unknown retryOn", { tag: "a", retryStrategy: "none", retryOn: "all" }],
    ["retryOn 5xx", { tag: "a", retryStrategy: "none", retryOn: "5xx" }],
    // shape comes before validation: an invalid tag does not hide a wrong type
    ["wrong type next to an invalid tag", { tag: "A B", maxConcurrent: "1" }]
  ]
  it.each(rows)("POST: %s", (_what, body) => {
    expect(postOutcome(body)).toBe("shape")
  })

  it.each([
    ["null body", null],
    ["array body", []],
    ["tag null", { tag: null }],
    ["maxConcurrent a fraction", { maxConcurrent: 2.5 }],
    ["window 1w", { throughput: { "1w": 1 } }],
    ["unknown retryOn", { retryOn: "never" }]
  ] as const)("PUT: %s", (_what, body) => {
    expect(putOutcome(fields({ maxConcurrent: 1 }), body)).toBe("shape")
  })

  it("a shape failure carries a reason, the Timewheel-Error hint (the response body stays empty)", () => {
    expect(decodeTagPolicyBody({ tag: "a", throughput: { "1w": 1 } }, "create")).toEqual({
      _tag: "Shape", reason: `throughput window "1w": a whole number followed by s, m, h or d`
    })
    expect(decodeTagPolicyBody({ maxConcurrent: 1 }, "create")).toEqual({ _tag: "Shape", reason: "tag is required" })
    expect(decodeTagPolicyBody({ retryOn: "x" }, "update")).toEqual({
      _tag: "Shape", reason: "retryOn must be one of network_only, 5xx_and_network, non_2xx"
    })
  })

  it("unknown top-level fields are ignored; PUT needs no tag", () => {
    expect(decodeTagPolicyBody({ tag: "a", maxConcurrent: 2, per: 5, retry: {}, id: "x" }, "create")).toEqual({
      _tag: "Ok", body: { tag: "a", maxConcurrent: 2 }
    })
    expect(decodeTagPolicyBody({ whatever: 1 }, "update")).toEqual({ _tag: "Ok", body: {} })
  })

  it("whole numbers written as 1.0 or 1e3 are integers; -0 is 0", () => {
    expect(decodeTagPolicyBody(JSON.parse('{"tag":"a","maxConcurrent":1.0,"requestTimeoutSeconds":1e3}'), "create")).toEqual({
      _tag: "Ok", body: { tag: "a", maxConcurrent: 1, requestTimeoutSeconds: 1000 }
    })
    const decoded = decodeTagPolicyBody(JSON.parse('{"retryInitialDelaySeconds":-0}'), "update")
    expect(decoded._tag === "Ok" && Object.is(decoded.body.retryInitialDelaySeconds, 0)).toBe(true)
  })
})

describe("validation messages, exact text (POST)", () => {
  const rows: ReadonlyArray<readonly [body: Record<string, unknown>, expected: string]> = [
    // tag
    [{ tag: "", maxConcurrent: 1 }, INVALID_TAG],
    [{ tag: "Api", maxConcurrent: 1 }, INVALID_TAG],
    [{ tag: "a b", maxConcurrent: 1 }, INVALID_TAG],
    [{ tag: "a.b", maxConcurrent: 1 }, INVALID_TAG],
    [{ tag: "é", maxConcurrent: 1 }, INVALID_TAG],
    [{ tag: "a".repeat(51), maxConcurrent: 1 }, INVALID_TAG],
    [{ tag: "a".repeat(50), maxConcurrent: 1 }, "ok"],
    [{ tag: "api_v2-eu", maxConcurrent: 1 }, "ok"],
    // at least one of (create only)
    [{ tag: "a" }, NOTHING_SPECIFIED],
    [{ tag: "a", retryOn: "non_2xx", retryMaxAttempts: 5, retryInitialDelaySeconds: 3 }, NOTHING_SPECIFIED],
    [{ tag: "a", throughput: {} }, NOTHING_SPECIFIED],
    [{ tag: "a", maxConcurrent: null, throughput: null }, NOTHING_SPECIFIED],
    [{ tag: "a", throughput: { "1s": 10 } }, "ok"],
    [{ tag: "a", maxConcurrent: 1 }, "ok"],
    [{ tag: "a", requestTimeoutSeconds: 30 }, "ok"],
    [{ tag: "a", retryStrategy: "none" }, "ok"],
    // requestTimeoutSeconds
    [{ tag: "a", requestTimeoutSeconds: 0 }, TIMEOUT],
    [{ tag: "a", requestTimeoutSeconds: -5 }, TIMEOUT],
    [{ tag: "a", requestTimeoutSeconds: 3601 }, TIMEOUT],
    [{ tag: "a", requestTimeoutSeconds: 1 }, "ok"],
    [{ tag: "a", requestTimeoutSeconds: 3600 }, "ok"],
    // maxConcurrent
    [{ tag: "a", maxConcurrent: 0 }, MAX_CONCURRENT],
    [{ tag: "a", maxConcurrent: -3 }, MAX_CONCURRENT],
    [{ tag: "a", maxConcurrent: 2_147_483_647 }, "ok"],
    // window count
    [{ tag: "a", throughput: windows(9) }, WINDOWS],
    [{ tag: "a", throughput: windows(8) }, "ok"],
    // rate
    [{ tag: "a", throughput: { "1m": -1 } }, rate("1m")],
    [{ tag: "a", throughput: { "1s": 5, "1h": -0.5 } }, rate("1h")],
    [JSON.parse('{"tag":"a","throughput":{"1s":1e400}}'), rate("1s")],
    [{ tag: "a", throughput: { "1s": 0 } }, "ok"],
    [{ tag: "a", throughput: { "1s": 0.001 } }, "ok"],
    [{ tag: "a", throughput: { "1s": 2.5, "1d": 1e9 } }, "ok"],
    // effective window: stretched below 1 (with the note), as written otherwise (without it)
    [{ tag: "a", throughput: { "1d": 0.01 } }, effective("1d", 0.01) + STRETCH_NOTE],
    [{ tag: "a", throughput: { "15d": 0.49 } }, effective("15d", 0.49) + STRETCH_NOTE],
    [{ tag: "a", throughput: { "15d": 0.5 } }, "ok"],
    [{ tag: "a", throughput: { "10d": 0.3333333333333333 } }, "ok"],
    [{ tag: "a", throughput: { "1s": 0.000001 } }, "ok"],
    [{ tag: "a", throughput: { "1s": 1e-8 } }, effective("1s", 1e-8) + STRETCH_NOTE],
    [{ tag: "a", throughput: { "30d": 1 } }, "ok"],
    [{ tag: "a", throughput: { "720h": 2 } }, "ok"],
    [{ tag: "a", throughput: { "2592000s": 1 } }, "ok"],
    [{ tag: "a", throughput: { "2592001s": 1 } }, effective("2592001s", 1)],
    [{ tag: "a", throughput: { "31d": 100 } }, effective("31d", 100)],
    [{ tag: "a", throughput: { "43201m": 1 } }, effective("43201m", 1)],
    [{ tag: "a", throughput: { "31d": 0 } }, effective("31d", 0)],
    [{ tag: "a", throughput: { "99999999999999999999d": 1 } }, effective("99999999999999999999d", 1)],
    // retryMaxAttempts
    [{ tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 5, retryMaxAttempts: 0 }, MAX_ATTEMPTS],
    [{ tag: "a", retryStrategy: "none", retryMaxAttempts: -1 }, MAX_ATTEMPTS],
    [{ tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 5, retryMaxAttempts: 1 }, "ok"],
    [{ tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 5, retryMaxAttempts: null }, "ok"],
    // retryInitialDelaySeconds required (≥0)
    [{ tag: "a", retryStrategy: "fixed" }, INITIAL_REQUIRED],
    [{ tag: "a", retryStrategy: "exponential" }, INITIAL_REQUIRED],
    [{ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: null }, INITIAL_REQUIRED],
    [{ tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: -1 }, INITIAL_REQUIRED],
    [{ tag: "a", retryStrategy: "none", retryInitialDelaySeconds: -1 }, INITIAL_REQUIRED],
    [{ tag: "a", maxConcurrent: 1, retryInitialDelaySeconds: -1 }, INITIAL_REQUIRED],
    [{ tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 0 }, "ok"],
    [{ tag: "a", retryStrategy: "none" }, "ok"],
    // retryMaxDelaySeconds ≥ 0
    [{ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 1, retryMaxDelaySeconds: -1 }, MAX_DELAY_NEGATIVE],
    [{ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 1, retryMaxDelaySeconds: 0 }, "ok"],
    [{ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 1, retryMaxDelaySeconds: null }, "ok"],
    // upper bounds
    [{ tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 86_401 }, INITIAL_MAX],
    [{ tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 86_400 }, "ok"],
    [{ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 1, retryMaxDelaySeconds: 86_401 }, MAX_DELAY_MAX],
    [{ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 1, retryMaxDelaySeconds: 86_400 }, "ok"],
    // a cap below the initial delay is allowed (the cap wins, as in retry.ts)
    [{ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 600, retryMaxDelaySeconds: 60 }, "ok"]
  ]
  it.each(rows)("%j → %s", (body, expected) => {
    expect(postOutcome(body)).toBe(expected)
  })
})

describe("order: a body breaking two rules gets the earlier message (the documented order)", () => {
  const rows: ReadonlyArray<readonly [what: string, body: Record<string, unknown>, expected: string]> = [
    ["tag before at-least-one", { tag: "A" }, INVALID_TAG],
    ["tag before timeout", { tag: "A", requestTimeoutSeconds: 0 }, INVALID_TAG],
    ["at-least-one before retryMaxAttempts", { tag: "a", retryMaxAttempts: 0 }, NOTHING_SPECIFIED],
    ["timeout before maxConcurrent", { tag: "a", requestTimeoutSeconds: 0, maxConcurrent: 0 }, TIMEOUT],
    ["maxConcurrent before window count", { tag: "a", maxConcurrent: 0, throughput: windows(9) }, MAX_CONCURRENT],
    ["window count before rate", { tag: "a", throughput: { ...windows(8), "1d": -1 } }, WINDOWS],
    [
      "every rate before any effective window",
      { tag: "a", throughput: { "1d": 0.01, "1s": -2 } },
      rate("1s")
    ],
    ["the first effective window in body order", { tag: "a", throughput: { "31d": 1, "1d": 0.01 } }, effective("31d", 1)],
    [
      "effective window before retryMaxAttempts",
      { tag: "a", throughput: { "1d": 0.01 }, retryMaxAttempts: 0 },
      effective("1d", 0.01) + STRETCH_NOTE
    ],
    ["rate before retry rules", { tag: "a", throughput: { "1s": -1 }, retryStrategy: "fixed" }, rate("1s")],
    ["retryMaxAttempts before initial delay required", { tag: "a", retryStrategy: "fixed", retryMaxAttempts: 0 }, MAX_ATTEMPTS],
    [
      "initial delay required before retryMaxDelaySeconds ≥ 0",
      { tag: "a", retryStrategy: "fixed", retryMaxDelaySeconds: -1 },
      INITIAL_REQUIRED
    ],
    [
      "retryMaxDelaySeconds ≥ 0 before initial ≤ 86400",
      { tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 86_401, retryMaxDelaySeconds: -1 },
      MAX_DELAY_NEGATIVE
    ],
    [
      "initial ≤ 86400 before max ≤ 86400",
      { tag: "a", retryStrategy: "fixed", retryInitialDelaySeconds: 86_401, retryMaxDelaySeconds: 86_401 },
      INITIAL_MAX
    ]
  ]
  it.each(rows)("%s", (_what, body, expected) => {
    expect(postOutcome(body)).toBe(expected)
  })
})

describe("PUT: the body merged over the stored policy, then validated as it would be", () => {
  const concurrencyOnly = fields({ maxConcurrent: 2 })
  const fixedRetry = fields({ retryStrategy: "fixed", retryInitialDelaySeconds: 10 })
  const rows: ReadonlyArray<readonly [what: string, stored: TagPolicyFields, body: Record<string, unknown>, expected: string]> = [
    ["an empty body keeps everything", concurrencyOnly, {}, "ok"],
    ["at-least-one is not checked on update", concurrencyOnly, { maxConcurrent: null }, "ok"],
    ["retryStrategy alone without a stored initial delay", concurrencyOnly, { retryStrategy: "fixed" }, INITIAL_REQUIRED],
    ["exponential alone, likewise", concurrencyOnly, { retryStrategy: "exponential" }, INITIAL_REQUIRED],
    ["retryStrategy with the delay", concurrencyOnly, { retryStrategy: "fixed", retryInitialDelaySeconds: 10 }, "ok"],
    ["retryStrategy alone over a stored delay", fields({ retryInitialDelaySeconds: 10 }), { retryStrategy: "exponential" }, "ok"],
    ["clearing the delay a stored strategy needs", fixedRetry, { retryInitialDelaySeconds: null }, INITIAL_REQUIRED],
    ["clearing strategy and delay together", fixedRetry, { retryStrategy: null, retryInitialDelaySeconds: null }, "ok"],
    ["a new valid tag", concurrencyOnly, { tag: "billing" }, "ok"],
    ["a new invalid tag", concurrencyOnly, { tag: "Billing" }, INVALID_TAG],
    ["range rules apply as on create", concurrencyOnly, { maxConcurrent: 0 }, MAX_CONCURRENT],
    ["a stored bad value is reported though the body did not touch it", fields({ requestTimeoutSeconds: 0 }), { maxConcurrent: 1 }, TIMEOUT]
  ]
  it.each(rows)("%s", (_what, stored, body, expected) => {
    expect(putOutcome(stored, body)).toBe(expected)
  })

  const stored: StoredTagPolicy = {
    ...fields({ maxConcurrent: 2, throughput: { "1s": 5, "1m": 100 }, retryStrategy: "fixed", retryInitialDelaySeconds: 10 }),
    id: "0190b1c2-0000-7000-8000-000000000001",
    createdAt: new Date("2025-01-01T00:00:00Z"),
    updatedAt: new Date("2025-01-01T00:00:00Z")
  }
  const merged = (body: Record<string, unknown>): StoredTagPolicy => {
    const decoded = decodeTagPolicyBody(body, "update")
    if (decoded._tag === "Shape") throw new Error(decoded.reason)
    return mergeTagPolicyUpdate(stored, decoded.body)
  }

  it("present fields replace, absent keep, id and timestamps stay (the store sets updatedAt)", () => {
    expect(merged({ maxConcurrent: 7, tag: "billing" })).toEqual({ ...stored, maxConcurrent: 7, tag: "billing" })
    expect(merged({})).toEqual(stored)
  })
  it("throughput is replaced as a whole, not merged window by window", () => {
    expect(merged({ throughput: { "1h": 10 } }).throughput).toEqual({ "1h": 10 })
  })
  it("null clears a field; {} clears throughput", () => {
    expect(merged({ maxConcurrent: null, retryStrategy: null }).maxConcurrent).toBeNull()
    expect(merged({ retryStrategy: null }).retryStrategy).toBeNull()
    expect(merged({ throughput: null }).throughput).toBeNull()
    expect(merged({ throughput: {} }).throughput).toBeNull()
  })
  it("retryMaxAttempts: null means unlimited; absent keeps the stored count", () => {
    expect(merged({ retryMaxAttempts: null }).retryMaxAttempts).toBeNull()
    expect(merged({ retryMaxAttempts: 9 }).retryMaxAttempts).toBe(9)
    expect(merged({ maxConcurrent: 1 }).retryMaxAttempts).toBe(3)
  })
})

describe("null handling and defaults on create", () => {
  it("absent and null are both unset, except retryMaxAttempts (absent → 3, null → unlimited)", () => {
    expect(created({ tag: "a", maxConcurrent: 1 })).toEqual(fields({ tag: "a", maxConcurrent: 1 }))
    expect(created({ tag: "a", maxConcurrent: 1, requestTimeoutSeconds: null, retryOn: null })).toEqual(
      fields({ tag: "a", maxConcurrent: 1 })
    )
    expect(created({ tag: "a", maxConcurrent: 1, retryMaxAttempts: null }).retryMaxAttempts).toBeNull()
  })
  it("a strategy with nothing else: 3 attempts, 5xx_and_network, no cap, no jitter", () => {
    const policy = created({ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 5 })
    expect(policy).toEqual(fields({ tag: "a", retryStrategy: "exponential", retryInitialDelaySeconds: 5 }))
    expect(tagRetryPolicy(policy)).toEqual({
      strategy: "exponential", maxAttempts: 3, initialDelaySeconds: 5, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network"
    })
  })
})

describe("tagRetryPolicy and the merge of several tags (docs/retries.md)", () => {
  const rows: ReadonlyArray<readonly [what: string, policy: TagPolicyFields, expected: RetryPolicy | null]> = [
    ["no strategy: no opinion", fields({ maxConcurrent: 1 }), null],
    ["none: no opinion", fields({ retryStrategy: "none", retryMaxAttempts: 1 }), null],
    [
      "fixed with every field",
      fields({ retryStrategy: "fixed", retryMaxAttempts: 5, retryInitialDelaySeconds: 10, retryMaxDelaySeconds: 20, retryOn: "non_2xx" }),
      { strategy: "fixed", maxAttempts: 5, initialDelaySeconds: 10, maxDelaySeconds: 20, jitter: false, retryOn: "non_2xx" }
    ],
    [
      "unlimited attempts",
      fields({ retryStrategy: "exponential", retryMaxAttempts: null, retryInitialDelaySeconds: 1, retryOn: "network_only" }),
      { strategy: "exponential", maxAttempts: null, initialDelaySeconds: 1, maxDelaySeconds: null, jitter: false, retryOn: "network_only" }
    ]
  ]
  it.each(rows)("%s", (_what, policy, expected) => {
    expect(tagRetryPolicy(policy)).toEqual(expected)
  })

  const lenient = fields({ tag: "lenient", retryStrategy: "fixed", retryMaxAttempts: 10, retryInitialDelaySeconds: 5, retryMaxDelaySeconds: 30, retryOn: "non_2xx" })
  const strict = fields({ tag: "strict", retryStrategy: "exponential", retryMaxAttempts: 2, retryInitialDelaySeconds: 60, retryMaxDelaySeconds: 600, retryOn: "network_only" })
  const noOpinion = fields({ tag: "quiet", retryStrategy: "none", retryMaxAttempts: 1 })
  const gateOnly = fields({ tag: "gate", maxConcurrent: 1 })
  const perTrigger: RetryPolicy = { ...TRIGGER_DEFAULT_RETRY, maxAttempts: 7 }
  const effectiveFor = (tagPolicies: ReadonlyArray<TagPolicyFields>, trigger: RetryPolicy | null = null) =>
    effectivePolicy({ trigger, tagPolicies: tagRetryPolicies(tagPolicies), project: PROJECT_DEFAULT_RETRY })

  it("several tags merge to the most defensive: fewest attempts, longest delay, most restrictive retryOn", () => {
    expect(effectiveFor([lenient, strict, noOpinion, gateOnly])).toEqual({
      strategy: "exponential", maxAttempts: 2, initialDelaySeconds: 60, maxDelaySeconds: 600, jitter: false, retryOn: "network_only"
    })
  })
  it("a tag with `none` or no strategy expresses no opinion: the others decide", () => {
    expect(effectiveFor([noOpinion, lenient])).toEqual(tagRetryPolicy(lenient))
  })
  it("no opinion at all: the project default", () => {
    expect(effectiveFor([noOpinion, gateOnly])).toEqual(PROJECT_DEFAULT_RETRY)
    expect(effectiveFor([])).toEqual(PROJECT_DEFAULT_RETRY)
  })
  it("a per-trigger policy replaces the tags' opinion", () => {
    expect(effectiveFor([strict], perTrigger)).toEqual(perTrigger)
  })
  it("unlimited attempts lose to any finite count", () => {
    const unlimited = fields({ retryStrategy: "fixed", retryMaxAttempts: null, retryInitialDelaySeconds: 1 })
    expect(effectiveFor([unlimited, lenient]).maxAttempts).toBe(10)
  })
})

describe("view (docs/tag-policies.md)", () => {
  const stored: StoredTagPolicy = {
    ...fields({ tag: "api", throughput: { "1s": 10, "1h": 500 }, maxConcurrent: 3 }),
    id: "0190b1c2-0000-7000-8000-000000000002",
    createdAt: new Date("2025-03-01T10:00:00Z"),
    updatedAt: new Date("2025-03-02T11:30:00.250Z")
  }
  it("every request field (unset as null), id, ISO timestamps, live counts, the hold; throughput as stored", () => {
    expect(JSON.stringify(tagPolicyView(stored, { queued: 4, inFlight: 3, heldUntil: new Date("2025-03-02T12:00:02Z") }))).toBe(
      JSON.stringify({
        id: "0190b1c2-0000-7000-8000-000000000002",
        tag: "api",
        maxConcurrent: 3,
        requestTimeoutSeconds: null,
        throughput: { "1s": 10, "1h": 500 },
        retryStrategy: null,
        retryMaxAttempts: 3,
        retryInitialDelaySeconds: null,
        retryMaxDelaySeconds: null,
        retryOn: null,
        createdAt: "2025-03-01T10:00:00.000Z",
        updatedAt: "2025-03-02T11:30:00.250Z",
        queued: 4,
        inFlight: 3,
        heldUntil: "2025-03-02T12:00:02.000Z"
      })
    )
  })
  it("unlimited attempts show as null; a tag not held shows heldUntil null", () => {
    const view = tagPolicyView({ ...stored, retryMaxAttempts: null }, { queued: 0, inFlight: 0, heldUntil: null })
    expect([view.retryMaxAttempts, view.heldUntil]).toEqual([null, null])
  })
})

describe("gating and request timeout", () => {
  const rows: ReadonlyArray<readonly [what: string, policy: TagPolicyFields, gating: boolean]> = [
    ["maxConcurrent", fields({ maxConcurrent: 1 }), true],
    ["throughput", fields({ throughput: { "1s": 5 } }), true],
    ["a paused throughput", fields({ throughput: { "1s": 0 } }), true],
    ["timeout only", fields({ requestTimeoutSeconds: 10 }), false],
    ["retry only", fields({ retryStrategy: "fixed", retryInitialDelaySeconds: 1 }), false],
    ["nothing (after a PUT cleared it all)", fields(), false]
  ]
  it.each(rows)("isGating: %s → %s", (_what, policy, gating) => {
    expect(isGating(policy)).toBe(gating)
  })

  const timeouts: ReadonlyArray<readonly [timeouts: ReadonlyArray<number | null>, expected: number | undefined]> = [
    [[], undefined],
    [[null, null], undefined],
    [[30], 30],
    [[300, null, 20, 3600], 20],
    [[1, 3600], 1]
  ]
  it.each(timeouts)("requestTimeoutFor %j → %s (shortest wins)", (values, expected) => {
    expect(requestTimeoutFor(values.map((requestTimeoutSeconds) => fields({ requestTimeoutSeconds })))).toBe(expected)
  })
})
