// Retry policies (docs/retries.md):
// reading them from `ttr-retry-*` headers and from a project-policy patch, choosing the policy that
// applies to a trigger, and the one pure function that decides an attempt's outcome
// (succeeded, retry after a delay, or dead letter).

import type { ErrorKind } from "./errorKind.ts"

export type RetryStrategy = "none" | "fixed" | "exponential"
export type RetryOn = "network_only" | "5xx_and_network" | "non_2xx"

export interface RetryPolicy {
  readonly strategy: RetryStrategy
  /** Counts the first attempt; null = unlimited. */
  readonly maxAttempts: number | null
  readonly initialDelaySeconds: number
  /** Cap of an exponential delay; null = no cap. */
  readonly maxDelaySeconds: number | null
  readonly jitter: boolean
  readonly retryOn: RetryOn
}

export const RETRY_STRATEGIES: ReadonlyArray<RetryStrategy> = ["none", "fixed", "exponential"]
/** Ordered from most to least restrictive (fewest retried outcomes first). */
export const RETRY_ONS: ReadonlyArray<RetryOn> = ["network_only", "5xx_and_network", "non_2xx"]

/** Largest delay a policy may state (docs/README.md "Limits at a glance": at most 86400 seconds). */
export const MAX_DELAY_SECONDS = 86_400
/** Largest finite maxAttempts (a Postgres `integer`). */
export const MAX_ATTEMPTS_LIMIT = 2_147_483_647
/** Hard ceiling of one computed retry delay, so an uncapped exponential stays a representable date. */
export const MAX_RETRY_DELAY_MS = 365 * 86_400_000

export const PROJECT_DEFAULT_RETRY: RetryPolicy = {
  strategy: "exponential",
  maxAttempts: 3,
  initialDelaySeconds: 30,
  maxDelaySeconds: null,
  jitter: false,
  retryOn: "network_only"
}

export const TRIGGER_DEFAULT_RETRY: RetryPolicy = {
  strategy: "exponential",
  maxAttempts: 3,
  initialDelaySeconds: 30,
  maxDelaySeconds: null,
  jitter: false,
  retryOn: "5xx_and_network"
}

type Ok<A> = { readonly _tag: "Ok" } & A
type Err = { readonly _tag: "Err"; readonly message: string }

const isStrategy = (value: unknown): value is RetryStrategy =>
  (RETRY_STRATEGIES as ReadonlyArray<unknown>).includes(value)
const isRetryOn = (value: unknown): value is RetryOn => (RETRY_ONS as ReadonlyArray<unknown>).includes(value)

// ---------------------------------------------------------------------------------------------
// ttr-retry-* headers

const DIGITS = /^\d+$/

/** Whole number written as plain digits within [min, max]; undefined otherwise. */
const parseWholeNumber = (text: string, min: number, max: number): number | undefined => {
  if (!DIGITS.test(text)) return undefined
  const n = Number(text)
  return n >= min && n <= max ? n : undefined
}

const EXPECT_STRATEGY = `one of ${RETRY_STRATEGIES.join(", ")}`
const EXPECT_ATTEMPTS = `an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`
const EXPECT_DELAY = `whole seconds from 0 to ${MAX_DELAY_SECONDS}`
const EXPECT_JITTER = "true or false"
const EXPECT_RETRY_ON = `one of ${RETRY_ONS.join(", ")}`

/**
 * Reads the per-trigger policy from `<prefix>-retry-*` headers (`get` receives lowercase names).
 * None sent → `policy: null` (no per-trigger policy). Any sent → a policy whose other fields take
 * TRIGGER_DEFAULT_RETRY; strategy `none` pins it to one attempt. Values are trimmed and must be
 * exact (lowercase words, plain digits). Headers are checked in docs/retries.md's order; the first bad
 * one gives `Invalid <header>: <value> (<what is expected>)`. An empty value counts as sent.
 */
export const parseRetryHeaders = (
  get: (name: string) => string | undefined,
  prefix: string
): Ok<{ readonly policy: RetryPolicy | null }> | Err => {
  const names = {
    strategy: `${prefix}-retry-strategy`,
    maxAttempts: `${prefix}-retry-max-attempts`,
    initialDelay: `${prefix}-retry-initial-delay`,
    maxDelay: `${prefix}-retry-max-delay`,
    jitter: `${prefix}-retry-jitter`,
    retryOn: `${prefix}-retry-on`
  }
  const raw = {
    strategy: get(names.strategy),
    maxAttempts: get(names.maxAttempts),
    initialDelay: get(names.initialDelay),
    maxDelay: get(names.maxDelay),
    jitter: get(names.jitter),
    retryOn: get(names.retryOn)
  }
  if (Object.values(raw).every((v) => v === undefined)) return { _tag: "Ok", policy: null }
  const invalid = (name: string, value: string, expected: string): Err => ({
    _tag: "Err",
    message: `Invalid ${name}: ${value} (${expected})`
  })

  let { strategy, maxAttempts, initialDelaySeconds, maxDelaySeconds, jitter, retryOn } = TRIGGER_DEFAULT_RETRY
  if (raw.strategy !== undefined) {
    const v = raw.strategy.trim()
    if (!isStrategy(v)) return invalid(names.strategy, raw.strategy, EXPECT_STRATEGY)
    strategy = v
  }
  if (raw.maxAttempts !== undefined) {
    const n = parseWholeNumber(raw.maxAttempts.trim(), 1, MAX_ATTEMPTS_LIMIT)
    if (n === undefined) return invalid(names.maxAttempts, raw.maxAttempts, EXPECT_ATTEMPTS)
    maxAttempts = n
  }
  if (raw.initialDelay !== undefined) {
    const n = parseWholeNumber(raw.initialDelay.trim(), 0, MAX_DELAY_SECONDS)
    if (n === undefined) return invalid(names.initialDelay, raw.initialDelay, EXPECT_DELAY)
    initialDelaySeconds = n
  }
  if (raw.maxDelay !== undefined) {
    const n = parseWholeNumber(raw.maxDelay.trim(), 0, MAX_DELAY_SECONDS)
    if (n === undefined) return invalid(names.maxDelay, raw.maxDelay, EXPECT_DELAY)
    maxDelaySeconds = n
  }
  if (raw.jitter !== undefined) {
    const v = raw.jitter.trim()
    if (v !== "true" && v !== "false") return invalid(names.jitter, raw.jitter, EXPECT_JITTER)
    jitter = v === "true"
  }
  if (raw.retryOn !== undefined) {
    const v = raw.retryOn.trim()
    if (!isRetryOn(v)) return invalid(names.retryOn, raw.retryOn, EXPECT_RETRY_ON)
    retryOn = v
  }
  if (strategy === "none") maxAttempts = 1
  return { _tag: "Ok", policy: { strategy, maxAttempts, initialDelaySeconds, maxDelaySeconds, jitter, retryOn } }
}

// ---------------------------------------------------------------------------------------------
// Project default retry policy (GET / PUT /project/retry-policy)

/** The project policy with the API's field names, as GET and PUT answer it. */
export interface ProjectRetryPolicyView {
  readonly retryStrategy: RetryStrategy
  readonly retryMaxAttempts: number | null
  readonly retryInitialDelaySeconds: number
  readonly retryMaxDelaySeconds: number | null
  readonly retryJitter: boolean
  readonly retryOn: RetryOn
}

export const projectPolicyView = (policy: RetryPolicy): ProjectRetryPolicyView => ({
  retryStrategy: policy.strategy,
  retryMaxAttempts: policy.maxAttempts,
  retryInitialDelaySeconds: policy.initialDelaySeconds,
  retryMaxDelaySeconds: policy.maxDelaySeconds,
  retryJitter: policy.jitter,
  retryOn: policy.retryOn
})

const isDelay = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_DELAY_SECONDS

/**
 * The project policy as stored (its API view), the value or its JSON text: each field that is missing or not a valid value takes
 * the documented default, field by field. The one reading of a stored policy, for the API and for delivery.
 */
export const projectPolicyFromStored = (stored: unknown): RetryPolicy =>
  typeof stored === "string" ? projectPolicyFromText(stored) : projectPolicyFromObject(stored)

/**
 * The policy of its JSON text (what delivery reads: a project's attempts carry the same text, parsed
 * once while it does not change). Text that is not JSON reads as no fields set.
 */
const projectPolicyFromText = (text: string): RetryPolicy => {
  if (text !== lastPolicyText) {
    let stored: unknown
    try {
      stored = JSON.parse(text)
    } catch {
      stored = null
    }
    lastPolicy = projectPolicyFromObject(stored)
    lastPolicyText = text
  }
  return lastPolicy
}
let lastPolicyText: string | undefined
let lastPolicy: RetryPolicy = PROJECT_DEFAULT_RETRY

const projectPolicyFromObject = (stored: unknown): RetryPolicy => {
  const view = (typeof stored === "object" && stored !== null ? stored : {}) as Record<string, unknown>
  const d = PROJECT_DEFAULT_RETRY
  const attempts = view.retryMaxAttempts
  const maxDelay = view.retryMaxDelaySeconds
  return {
    strategy: isStrategy(view.retryStrategy) ? view.retryStrategy : d.strategy,
    maxAttempts: Number.isInteger(attempts) && (attempts as number) >= 1 ? (attempts as number) : d.maxAttempts,
    initialDelaySeconds: isDelay(view.retryInitialDelaySeconds) ? view.retryInitialDelaySeconds : d.initialDelaySeconds,
    maxDelaySeconds: maxDelay === null || isDelay(maxDelay) ? maxDelay : d.maxDelaySeconds,
    jitter: typeof view.retryJitter === "boolean" ? view.retryJitter : d.jitter,
    retryOn: isRetryOn(view.retryOn) ? view.retryOn : d.retryOn
  }
}

/**
 * Applies a `PUT /project/retry-policy` body to the current policy. Omitted fields keep their value,
 * unknown fields are ignored; the first bad field (in docs/retries.md's field order) gives a message
 * naming it. Null is accepted only for retryMaxDelaySeconds; the project policy always has a finite
 * attempt count.
 */
export const validateRetryPolicyPatch = (current: RetryPolicy, patch: unknown): Ok<{ readonly policy: RetryPolicy }> | Err => {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) {
    return { _tag: "Err", message: "Retry policy must be a JSON object" }
  }
  const p = patch as Record<string, unknown>
  const fail = (message: string): Err => ({ _tag: "Err", message })
  const has = (key: string): boolean => Object.hasOwn(p, key)

  let { strategy, maxAttempts, initialDelaySeconds, maxDelaySeconds, jitter, retryOn } = current
  if (has("retryStrategy")) {
    const v = p.retryStrategy
    if (!isStrategy(v)) return fail(`retryStrategy must be ${EXPECT_STRATEGY}`)
    strategy = v
  }
  if (has("retryMaxAttempts")) {
    const v = p.retryMaxAttempts
    if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > MAX_ATTEMPTS_LIMIT) {
      return fail(`retryMaxAttempts must be ${EXPECT_ATTEMPTS}`)
    }
    maxAttempts = v as number
  }
  if (has("retryInitialDelaySeconds")) {
    const v = p.retryInitialDelaySeconds
    if (!isDelay(v)) return fail(`retryInitialDelaySeconds must be an integer from 0 to ${MAX_DELAY_SECONDS}`)
    initialDelaySeconds = v
  }
  if (has("retryMaxDelaySeconds")) {
    const v = p.retryMaxDelaySeconds
    if (v !== null && !isDelay(v)) {
      return fail(`retryMaxDelaySeconds must be null or an integer from 0 to ${MAX_DELAY_SECONDS}`)
    }
    maxDelaySeconds = v
  }
  if (has("retryJitter")) {
    const v = p.retryJitter
    if (typeof v !== "boolean") return fail("retryJitter must be true or false")
    jitter = v
  }
  if (has("retryOn")) {
    const v = p.retryOn
    if (!isRetryOn(v)) return fail(`retryOn must be ${EXPECT_RETRY_ON}`)
    retryOn = v
  }
  return { _tag: "Ok", policy: { strategy, maxAttempts, initialDelaySeconds, maxDelaySeconds, jitter, retryOn } }
}

// ---------------------------------------------------------------------------------------------
// Which policy applies (docs/retries.md "Which policy applies")

/** A policy with a retry opinion: tag policies with strategy `none` express none (rule 3). */
export const hasRetryOpinion = (policy: RetryPolicy): boolean => policy.strategy !== "none"

const fewestAttempts = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Math.min(a, b)
/** Longest cap: no cap (null) is the longest of all. */
const longestCap = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : Math.max(a, b))
const mostRestrictiveRetryOn = (a: RetryOn, b: RetryOn): RetryOn => (RETRY_ONS.indexOf(a) <= RETRY_ONS.indexOf(b) ? a : b)

/**
 * Rule 2: merges the retry policies of a trigger's tags into the most defensive one — fewest
 * attempts (null = unlimited counts as most), longest initial delay, longest cap (no cap wins),
 * most restrictive retryOn (network_only < 5xx_and_network < non_2xx), exponential over fixed
 * (its delays only grow), jitter when any asks for it. Policies with strategy `none` are ignored
 * (rule 3). Undefined when no tag policy has an opinion.
 */
export const mergeTagRetryPolicies = (policies: ReadonlyArray<RetryPolicy>): RetryPolicy | undefined =>
  policies.filter(hasRetryOpinion).reduce<RetryPolicy | undefined>(
    (acc, p) =>
      acc === undefined
        ? p
        : {
            strategy: acc.strategy === "exponential" || p.strategy === "exponential" ? "exponential" : "fixed",
            maxAttempts: fewestAttempts(acc.maxAttempts, p.maxAttempts),
            initialDelaySeconds: Math.max(acc.initialDelaySeconds, p.initialDelaySeconds),
            maxDelaySeconds: longestCap(acc.maxDelaySeconds, p.maxDelaySeconds),
            jitter: acc.jitter || p.jitter,
            retryOn: mostRestrictiveRetryOn(acc.retryOn, p.retryOn)
          },
    undefined
  )

/**
 * Rule 1: the first that applies replaces the others — the per-trigger policy, else the merged
 * tag policies (each already resolved to a full RetryPolicy by the tag-policy module), else the
 * project default.
 */
export const effectivePolicy = (input: {
  readonly trigger: RetryPolicy | null
  readonly tagPolicies: ReadonlyArray<RetryPolicy>
  readonly project: RetryPolicy
}): RetryPolicy => input.trigger ?? mergeTagRetryPolicies(input.tagPolicies) ?? input.project

// ---------------------------------------------------------------------------------------------
// Outcome of an attempt (docs/retries.md "A retry policy")

export type AttemptResult =
  | { readonly _tag: "Response"; readonly httpStatus: number }
  | { readonly _tag: "NoResponse"; readonly errorKind: ErrorKind }

export type Outcome =
  | { readonly _tag: "Succeeded" }
  | { readonly _tag: "RetryAt"; readonly delayMs: number }
  | { readonly _tag: "DeadLetter" }

/** A 2xx response. */
export const isSuccess = (result: AttemptResult): boolean =>
  result._tag === "Response" && result.httpStatus >= 200 && result.httpStatus <= 299

/**
 * Whether a failed attempt may be retried under `retryOn`. Every retryOn retries an attempt that
 * got no response (or an unknown outcome), except `invalid_request`: the request itself is
 * refused (blocked target, forbidden header) and can never succeed. `5xx_and_network` also
 * retries 5xx; `non_2xx` retries every non-2xx response. A success is never "retryable".
 */
export const isRetryable = (retryOn: RetryOn, result: AttemptResult): boolean => {
  if (result._tag === "NoResponse") return result.errorKind !== "invalid_request"
  if (isSuccess(result)) return false
  switch (retryOn) {
    case "network_only":
      return false
    case "5xx_and_network":
      return result.httpStatus >= 500 && result.httpStatus <= 599
    case "non_2xx":
      return true
  }
}

/** Doubling stops here: 2^30 times any initial delay is already beyond MAX_RETRY_DELAY_MS. */
const MAX_EXPONENT = 30

/**
 * Delay before the attempt after `attempt` (1-based) failed, in ms: fixed = initial delay every
 * time; exponential = initial × 2^(attempt−1), capped by maxDelaySeconds; then the hard ceiling
 * MAX_RETRY_DELAY_MS; then jitter × (0.5 + random), rounded to whole milliseconds.
 */
export const retryDelayMs = (policy: RetryPolicy, attempt: number, random: number): number => {
  const exponent = policy.strategy === "exponential" ? Math.min(Math.max(attempt - 1, 0), MAX_EXPONENT) : 0
  let seconds = policy.initialDelaySeconds * 2 ** exponent
  if (policy.strategy === "exponential" && policy.maxDelaySeconds !== null) {
    seconds = Math.min(seconds, policy.maxDelaySeconds)
  }
  const ms = Math.min(seconds * 1_000, MAX_RETRY_DELAY_MS)
  if (!policy.jitter) return ms
  const r = Math.min(Math.max(random, 0), 1)
  return Math.round(ms * (0.5 + r))
}

/**
 * The one place that decides what follows an attempt: Succeeded on 2xx; DeadLetter when the
 * strategy is `none`, the failure is not retryable, or `attempt` (1-based, counting the first)
 * used the last allowed attempt; otherwise RetryAt after retryDelayMs. `random` is in [0, 1).
 */
export const decideOutcome = (input: {
  readonly policy: RetryPolicy
  readonly attempt: number
  readonly result: AttemptResult
  readonly random: number
}): Outcome => {
  const { policy, attempt, result, random } = input
  if (isSuccess(result)) return { _tag: "Succeeded" }
  if (policy.strategy === "none") return { _tag: "DeadLetter" }
  if (!isRetryable(policy.retryOn, result)) return { _tag: "DeadLetter" }
  if (policy.maxAttempts !== null && attempt >= policy.maxAttempts) return { _tag: "DeadLetter" }
  return { _tag: "RetryAt", delayMs: retryDelayMs(policy, attempt, random) }
}
