// Tag policies (docs/tag-policies.md "Fields", "Endpoints"): the shape of a
// POST/PUT body, the new policy and PUT's merge over the stored one, the JSON view, and what a
// policy means for delivery (its retry policy, whether it gates sends, its request timeout). The
// validation messages live in tagPolicyValidation.ts. Pure: callers feed parsed JSON and rows.

import { RETRY_ONS, RETRY_STRATEGIES, TRIGGER_DEFAULT_RETRY } from "./retry.ts"
import type { RetryOn, RetryPolicy, RetryStrategy } from "./retry.ts"
import { decodeThroughput, type FieldDecoder, integer, isPlainObject, nullable, oneOf, valid, wrong } from "./policyDecoding.ts"
import type { Throughput } from "./gates/throughput.ts"

/**
 * A policy's request fields with the API's names. `null` is "unset" everywhere except
 * retryMaxAttempts, where null means unlimited: that field is never unset (a create without it
 * stores DEFAULT_TAG_RETRY_MAX_ATTEMPTS), so the view's `null` there can only mean unlimited.
 */
export interface TagPolicyFields {
  readonly tag: string
  readonly maxConcurrent: number | null
  readonly requestTimeoutSeconds: number | null
  /** null when unset; never an empty object (decoding turns `{}` into null). */
  readonly throughput: Throughput | null
  readonly retryStrategy: RetryStrategy | null
  /** Counts the first attempt; null = unlimited. */
  readonly retryMaxAttempts: number | null
  readonly retryInitialDelaySeconds: number | null
  /** Cap of an exponential delay; null = no cap. */
  readonly retryMaxDelaySeconds: number | null
  readonly retryOn: RetryOn | null
}

export interface StoredTagPolicy extends TagPolicyFields {
  readonly id: string
  readonly createdAt: Date
  readonly updatedAt: Date
}

/** The documented field order (docs/tag-policies.md "Fields"): shape reasons and the view follow it. */
export const TAG_POLICY_FIELDS = [
  "tag",
  "maxConcurrent",
  "requestTimeoutSeconds",
  "throughput",
  "retryStrategy",
  "retryMaxAttempts",
  "retryInitialDelaySeconds",
  "retryMaxDelaySeconds",
  "retryOn"
] as const satisfies ReadonlyArray<keyof TagPolicyFields>

/** A decoded body: a present field replaces, `null` clears (retryMaxAttempts: unlimited), absent keeps. */
export type TagPolicyBody = { readonly [K in keyof TagPolicyFields]?: TagPolicyFields[K] }
export type TagPolicyCreateBody = TagPolicyBody & { readonly tag: string }

export type TagPolicyMode = "create" | "update"

/** Defaults of a tag policy's retry fields (a policy with strategy fixed or exponential). */
export const DEFAULT_TAG_RETRY_MAX_ATTEMPTS = 3
export const DEFAULT_TAG_RETRY_ON: RetryOn = "5xx_and_network"

// ---------------------------------------------------------------------------------------------
// Shape (400 with an empty body)

/** The API answers every shape failure with an empty 400; `reason` is its `Timewheel-Error` hint. */
export type DecodedTagPolicyBody<B> =
  | { readonly _tag: "Ok"; readonly body: B }
  | { readonly _tag: "Shape"; readonly reason: string }

const decodeTag: FieldDecoder<string> = (value) => (typeof value === "string" ? valid(value) : wrong("tag must be a string"))

const FIELD_DECODERS: { readonly [K in keyof TagPolicyFields]: FieldDecoder<TagPolicyFields[K]> } = {
  tag: decodeTag,
  maxConcurrent: nullable(integer("maxConcurrent")),
  requestTimeoutSeconds: nullable(integer("requestTimeoutSeconds")),
  throughput: decodeThroughput,
  retryStrategy: nullable(oneOf("retryStrategy", RETRY_STRATEGIES)),
  retryMaxAttempts: nullable(integer("retryMaxAttempts")),
  retryInitialDelaySeconds: nullable(integer("retryInitialDelaySeconds")),
  retryMaxDelaySeconds: nullable(integer("retryMaxDelaySeconds")),
  retryOn: nullable(oneOf("retryOn", RETRY_ONS))
}

/**
 * Shape check of a POST (create) or PUT (update) body, fields in the documented order: not an object, `tag`
 * missing on create, a wrong type (a string for a number, a fraction or a number beyond 32 bits for
 * an integer, null for tag), an unknown retryStrategy or retryOn, a malformed throughput window.
 * Unknown top-level fields are ignored. `null` clears a field (retryMaxAttempts: unlimited).
 */
export function decodeTagPolicyBody(json: unknown, mode: "create"): DecodedTagPolicyBody<TagPolicyCreateBody>
export function decodeTagPolicyBody(json: unknown, mode: "update"): DecodedTagPolicyBody<TagPolicyBody>
export function decodeTagPolicyBody(json: unknown, mode: TagPolicyMode): DecodedTagPolicyBody<TagPolicyBody> {
  if (!isPlainObject(json)) return { _tag: "Shape", reason: "body must be a JSON object" }
  if (mode === "create" && !Object.hasOwn(json, "tag")) return { _tag: "Shape", reason: "tag is required" }
  const body: Record<string, unknown> = {}
  for (const field of TAG_POLICY_FIELDS) {
    if (!Object.hasOwn(json, field)) continue
    const result = (FIELD_DECODERS[field] as FieldDecoder<unknown>)(json[field])
    if (!result.ok) return { _tag: "Shape", reason: result.reason }
    body[field] = result.value
  }
  return { _tag: "Ok", body: body as TagPolicyBody }
}

// ---------------------------------------------------------------------------------------------
// Create and update

/** What a create starts from: everything unset, retryMaxAttempts at its default. */
const UNSET_FIELDS: Omit<TagPolicyFields, "tag"> = {
  maxConcurrent: null,
  requestTimeoutSeconds: null,
  throughput: null,
  retryStrategy: null,
  retryMaxAttempts: DEFAULT_TAG_RETRY_MAX_ATTEMPTS,
  retryInitialDelaySeconds: null,
  retryMaxDelaySeconds: null,
  retryOn: null
}

/** The policy a POST body describes (validate it with validateTagPolicy, mode "create"). */
export const newTagPolicyFields = (body: TagPolicyCreateBody): TagPolicyFields => ({ ...UNSET_FIELDS, ...body })

/**
 * PUT: the body over the stored policy — a present field replaces (null clears), an absent one
 * keeps. `tag` may change too; the merged policy is validated as a whole (mode "update"), so a new
 * tag meets the same rule as on create, and retry rules see the policy as it would be after the update.
 */
export const mergeTagPolicyUpdate = <P extends TagPolicyFields>(stored: P, patch: TagPolicyBody): P => ({ ...stored, ...patch })

// ---------------------------------------------------------------------------------------------
// View (docs/tag-policies.md "Endpoints")

export interface TagPolicyView extends TagPolicyFields {
  readonly id: string
  readonly createdAt: string
  readonly updatedAt: string
  /** The project's triggers with this tag held back (`queued`). */
  readonly queued: number
  /** The project's triggers with this tag being sent. */
  readonly inFlight: number
  /** When the tag's hold after a refusal of its target ends (ISO); null when it is not held. */
  readonly heldUntil: string | null
}

/** Every request field (unset = null), id, ISO timestamps, the live counts and the hold; throughput as stored. */
export const tagPolicyView = (
  stored: StoredTagPolicy,
  live: { readonly queued: number; readonly inFlight: number; readonly heldUntil: Date | null }
): TagPolicyView => ({
  id: stored.id,
  tag: stored.tag,
  maxConcurrent: stored.maxConcurrent,
  requestTimeoutSeconds: stored.requestTimeoutSeconds,
  throughput: stored.throughput === null ? null : { ...stored.throughput },
  retryStrategy: stored.retryStrategy,
  retryMaxAttempts: stored.retryMaxAttempts,
  retryInitialDelaySeconds: stored.retryInitialDelaySeconds,
  retryMaxDelaySeconds: stored.retryMaxDelaySeconds,
  retryOn: stored.retryOn,
  createdAt: stored.createdAt.toISOString(),
  updatedAt: stored.updatedAt.toISOString(),
  queued: live.queued,
  inFlight: live.inFlight,
  heldUntil: live.heldUntil === null ? null : live.heldUntil.toISOString()
})

// ---------------------------------------------------------------------------------------------
// What a policy means for delivery

/**
 * The tag's retry opinion as a RetryPolicy for `effectivePolicy({ tagPolicies })`, or null when the
 * strategy is unset or `none` (no opinion: docs/tag-policies.md "Fields"). Unset fields take: retryOn
 * 5xx_and_network, no delay cap, no jitter (tag policies have no jitter field); retryMaxAttempts is
 * never unset. A validated fixed/exponential policy always has an initial delay; should an unvalidated
 * one lack it, the per-trigger default (30 s) stands in.
 */
export const tagRetryPolicy = (policy: TagPolicyFields): RetryPolicy | null => {
  const strategy = policy.retryStrategy
  if (strategy === null || strategy === "none") return null
  return {
    strategy,
    maxAttempts: policy.retryMaxAttempts,
    initialDelaySeconds: policy.retryInitialDelaySeconds ?? TRIGGER_DEFAULT_RETRY.initialDelaySeconds,
    maxDelaySeconds: policy.retryMaxDelaySeconds,
    jitter: false,
    retryOn: policy.retryOn ?? DEFAULT_TAG_RETRY_ON
  }
}

/** The retry policies of a trigger's tag policies that express an opinion. */
export const tagRetryPolicies = (policies: ReadonlyArray<TagPolicyFields>): ReadonlyArray<RetryPolicy> =>
  policies.flatMap((policy) => tagRetryPolicy(policy) ?? [])

/** Holds triggers back (status `queued`): a concurrency limit or a throughput (a rate 0 pauses). */
export const isGating = (policy: TagPolicyFields): boolean =>
  policy.maxConcurrent !== null || (policy.throughput !== null && Object.keys(policy.throughput).length > 0)

/** The shortest requestTimeoutSeconds across a trigger's tag policies (docs/retries.md "Timeouts"), or undefined. */
export const requestTimeoutFor = (policies: ReadonlyArray<TagPolicyFields>): number | undefined =>
  policies.reduce<number | undefined>(
    (shortest, p) =>
      p.requestTimeoutSeconds === null ? shortest : Math.min(shortest ?? Infinity, p.requestTimeoutSeconds),
    undefined
  )
