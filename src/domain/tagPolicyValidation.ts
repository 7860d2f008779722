// Validation of a tag policy (docs/tag-policies.md "Errors"): the messages listed there, exact text,
// in that order; only the first broken rule is reported. POST validates the new policy (mode
// "create"), PUT the stored policy with the body merged over it (mode "update").

import { MAX_DELAY_SECONDS } from "./retry.ts"
import type { RetryStrategy } from "./retry.ts"
import type { TagPolicyFields, TagPolicyMode } from "./tagPolicy.ts"
import { isValidTag } from "./tags.ts"
import {
  effectiveWindowMs,
  isStretchingRate,
  isValidRate,
  MAX_EFFECTIVE_WINDOW_MS,
  MAX_THROUGHPUT_WINDOWS,
  windowLabelMs
} from "./gates/throughput.ts"
import type { Throughput } from "./gates/throughput.ts"

export type TagPolicyValidation = { readonly _tag: "Ok" } | { readonly _tag: "Err"; readonly message: string }

/** Appended to the effective-window message when 0 < rate < 1 (docs/tag-policies.md "Errors", 7). */
export const STRETCH_NOTE = " (rates below 1 stretch the window by 1/rate)"

type Rule = (policy: TagPolicyFields, mode: TagPolicyMode) => string | undefined

/** The limits a tag policy and a target policy share, validated alike. */
export interface LimitFields {
  readonly maxConcurrent: number | null
  readonly throughput: Throughput | null
}
type LimitRule = (policy: LimitFields) => string | undefined

const windowsOf = (policy: LimitFields): ReadonlyArray<readonly [string, number]> =>
  Object.entries(policy.throughput ?? {})

const needsInitialDelay = (strategy: RetryStrategy | null): boolean => strategy === "fixed" || strategy === "exponential"

const tagRule: Rule = (p) => (isValidTag(p.tag) ? undefined : "Invalid tag (only a-z 0-9 _ - allowed, max 50 chars)")

/** Create only. A strategy counts even when it is `none`; a throughput without windows does not. */
const somethingSpecifiedRule: Rule = (p, mode) =>
  mode === "create" && windowsOf(p).length === 0 && p.maxConcurrent === null && p.requestTimeoutSeconds === null &&
    p.retryStrategy === null
    ? "At least one of throughput, concurrency, timeout, or retry strategy must be specified"
    : undefined

const requestTimeoutRule: Rule = (p) =>
  p.requestTimeoutSeconds !== null && (p.requestTimeoutSeconds < 1 || p.requestTimeoutSeconds > 3600)
    ? "requestTimeoutSeconds must be between 1 and 3600"
    : undefined

const maxConcurrentRule: LimitRule = (p) =>
  p.maxConcurrent !== null && p.maxConcurrent < 1 ? "maxConcurrent must be ≥ 1" : undefined

const windowCountRule: LimitRule = (p) =>
  windowsOf(p).length > MAX_THROUGHPUT_WINDOWS ? `At most ${MAX_THROUGHPUT_WINDOWS} throughput windows per policy` : undefined

/** Every window's rate is checked before any window's effective length (docs/tag-policies.md "Errors", 6). */
const ratesRule: LimitRule = (p) => {
  const bad = windowsOf(p).find(([, rate]) => !isValidRate(rate))
  return bad === undefined ? undefined : `Throughput rate for '${bad[0]}' must be a finite number ≥ 0`
}

/**
 * The 30-day limit holds for every window: stretched by 1/rate below 1 (then the note follows), as
 * written for a rate ≥ 1 or a pause (`{"31d": 5}` fails too, without the note).
 */
const effectiveWindowRule: LimitRule = (p) => {
  for (const [label, rate] of windowsOf(p)) {
    const windowMs = windowLabelMs(label) ?? Infinity
    if (effectiveWindowMs(windowMs, rate) > MAX_EFFECTIVE_WINDOW_MS) {
      const note = isStretchingRate(rate) ? STRETCH_NOTE : ""
      return `Effective window for '${label}' at rate ${rate} exceeds the 30-day maximum${note}`
    }
  }
  return undefined
}

/** maxConcurrent, then the throughput windows: their count, every rate, every effective length. */
export const LIMIT_RULES: ReadonlyArray<LimitRule> = [maxConcurrentRule, windowCountRule, ratesRule, effectiveWindowRule]

const maxAttemptsRule: Rule = (p) =>
  p.retryMaxAttempts !== null && p.retryMaxAttempts < 1 ? "retryMaxAttempts must be ≥ 1 (or null for unlimited)" : undefined

/** Missing under fixed/exponential, or negative whatever the strategy (there is no other message for it). */
const initialDelayRequiredRule: Rule = (p) => {
  const delay = p.retryInitialDelaySeconds
  const missing = delay === null && needsInitialDelay(p.retryStrategy)
  return missing || (delay !== null && delay < 0)
    ? "retryInitialDelaySeconds is required (≥0) when retryStrategy is 'fixed' or 'exponential'"
    : undefined
}

const maxDelayNonNegativeRule: Rule = (p) =>
  p.retryMaxDelaySeconds !== null && p.retryMaxDelaySeconds < 0 ? "retryMaxDelaySeconds must be ≥ 0" : undefined

const initialDelayMaxRule: Rule = (p) =>
  p.retryInitialDelaySeconds !== null && p.retryInitialDelaySeconds > MAX_DELAY_SECONDS
    ? "retryInitialDelaySeconds must be ≤ 86400 (1 day)"
    : undefined

const maxDelayMaxRule: Rule = (p) =>
  p.retryMaxDelaySeconds !== null && p.retryMaxDelaySeconds > MAX_DELAY_SECONDS
    ? "retryMaxDelaySeconds must be ≤ 86400 (1 day)"
    : undefined

/** The validation messages of docs/tag-policies.md "Errors", in its order. */
const RULES: ReadonlyArray<Rule> = [
  tagRule,
  somethingSpecifiedRule,
  requestTimeoutRule,
  ...LIMIT_RULES,
  maxAttemptsRule,
  initialDelayRequiredRule,
  maxDelayNonNegativeRule,
  initialDelayMaxRule,
  maxDelayMaxRule
]

/** The first rule the policy breaks, with its exact message; create = POST, update = PUT (after merging). */
export const validateTagPolicy = (policy: TagPolicyFields, mode: TagPolicyMode): TagPolicyValidation => {
  for (const rule of RULES) {
    const message = rule(policy, mode)
    if (message !== undefined) return { _tag: "Err", message }
  }
  return { _tag: "Ok" }
}
