// Target policies (docs/protecting-targets.md): limits and a circuit breaker per destination. A
// policy names an origin — scheme, host and port of a trigger's URL, lowercase, the default port
// left out — or `*`, each origin of the project without a policy of its own, separately. This
// module reads an origin (of a policy, of a trigger's URL), the shape of a POST/PUT body, the new
// policy and PUT's merge, the validation messages in their order, and the JSON view. Pure.
import type { CircuitPhase, CircuitSettings } from "./gates/circuitBreaker.ts"
import { decodeThroughput, type FieldDecoder, integer, isPlainObject, nullable, valid, wrong } from "./policyDecoding.ts"
import { LIMIT_RULES } from "./tagPolicyValidation.ts"
import type { Throughput } from "./gates/throughput.ts"

/** The origin of a policy that covers each origin of the project without a policy of its own. */
export const ANY_ORIGIN = "*"

/** `failures`: consecutive failed attempts that open the circuit (≥ 1); `cooldownSeconds`: how long it holds the origin first (1–3600). */
export type CircuitBreakerSettings = CircuitSettings

export interface TargetPolicyFields {
  /** A normalised origin (`https://api.example.com`), or `*`. */
  readonly origin: string
  readonly maxConcurrent: number | null
  /** null when unset; never an empty object (decoding turns `{}` into null). */
  readonly throughput: Throughput | null
  readonly circuitBreaker: CircuitBreakerSettings | null
}

export interface StoredTargetPolicy extends TargetPolicyFields {
  readonly id: string
  readonly createdAt: Date
  readonly updatedAt: Date
}

export type TargetPolicyMode = "create" | "update"

/** A decoded body: a present field replaces, `null` clears, absent keeps; `origin` only on create. */
export interface TargetPolicyBody {
  readonly maxConcurrent?: number | null
  readonly throughput?: Throughput | null
  readonly circuitBreaker?: CircuitBreakerSettings | null
}
export type TargetPolicyCreateBody = TargetPolicyBody & { readonly origin: string }

// ---------------------------------------------------------------------------------------------
// Origins

const HTTP_SCHEMES = new Set(["http:", "https:"])

/**
 * The origin of a trigger's URL (`new URL(url).origin`: lowercase, punycode, default port left out,
 * no user info), or null when the URL is not an absolute http(s) URL.
 */
export const originOfUrl = (url: string): string | null => {
  try {
    const parsed = new URL(url)
    return HTTP_SCHEMES.has(parsed.protocol) && parsed.hostname !== "" ? parsed.origin : null
  } catch {
    return null
  }
}

/** Characters an origin as written may not hold: whitespace and controls, and what starts user info, a query or a fragment. */
const NOT_IN_ORIGIN = /[\s\x00-\x1f\x7f?#@\\]/

/**
 * A policy's origin as stored: `*` as is, else an http(s) URL of a scheme, a host and a port at
 * most, normalised (`HTTPS://API.example.com:443` → `https://api.example.com`); null when it is not
 * one (a path other than `/`, a query, a fragment, user info, another scheme).
 */
export const normaliseOrigin = (value: string): string | null => {
  if (value === ANY_ORIGIN) return ANY_ORIGIN
  if (NOT_IN_ORIGIN.test(value)) return null
  let parsed: URL
  try {
    parsed = new URL(value)
  } catch {
    return null
  }
  if (!HTTP_SCHEMES.has(parsed.protocol) || parsed.hostname === "") return null
  if (parsed.username !== "" || parsed.password !== "" || parsed.pathname !== "/" || parsed.search !== "" || parsed.hash !== "") {
    return null
  }
  return parsed.origin
}

// ---------------------------------------------------------------------------------------------
// Shape (400 with an empty body, its reason in the Timewheel-Error hint)

export type DecodedTargetPolicyBody<B> =
  | { readonly _tag: "Ok"; readonly body: B }
  | { readonly _tag: "Shape"; readonly reason: string }

const decodeCircuitBreaker: FieldDecoder<CircuitBreakerSettings | null> = (value) => {
  if (value === null) return valid(null)
  if (!isPlainObject(value)) return wrong("circuitBreaker must be an object {failures, cooldownSeconds} or null")
  const out: Record<string, number> = {}
  for (const field of ["failures", "cooldownSeconds"] as const) {
    if (!Object.hasOwn(value, field)) return wrong(`circuitBreaker.${field} is required`)
    const decoded = integer(`circuitBreaker.${field}`)(value[field])
    if (!decoded.ok) return decoded
    out[field] = decoded.value
  }
  return valid({ failures: out.failures!, cooldownSeconds: out.cooldownSeconds! })
}

const LIMIT_DECODERS = {
  maxConcurrent: nullable(integer("maxConcurrent")),
  throughput: decodeThroughput,
  circuitBreaker: decodeCircuitBreaker
} as const

/**
 * Shape check of a POST (create) or PUT (update) body: not an object, `origin` missing or not a
 * string on create, a field of the wrong type (an integer that is not one, a malformed throughput
 * window, a circuitBreaker without its two integers). Unknown fields are ignored, and so is
 * `origin` on update (a policy's origin does not change).
 */
export function decodeTargetPolicyBody(json: unknown, mode: "create"): DecodedTargetPolicyBody<TargetPolicyCreateBody>
export function decodeTargetPolicyBody(json: unknown, mode: "update"): DecodedTargetPolicyBody<TargetPolicyBody>
export function decodeTargetPolicyBody(json: unknown, mode: TargetPolicyMode): DecodedTargetPolicyBody<TargetPolicyBody> {
  if (!isPlainObject(json)) return { _tag: "Shape", reason: "body must be a JSON object" }
  const body: Record<string, unknown> = {}
  if (mode === "create") {
    if (!Object.hasOwn(json, "origin")) return { _tag: "Shape", reason: "origin is required" }
    if (typeof json.origin !== "string") return { _tag: "Shape", reason: "origin must be a string" }
    body.origin = json.origin
  }
  for (const field of ["maxConcurrent", "throughput", "circuitBreaker"] as const) {
    if (!Object.hasOwn(json, field)) continue
    const result = (LIMIT_DECODERS[field] as FieldDecoder<unknown>)(json[field])
    if (!result.ok) return { _tag: "Shape", reason: result.reason }
    body[field] = result.value
  }
  return { _tag: "Ok", body: body as TargetPolicyBody }
}

// ---------------------------------------------------------------------------------------------
// Create, update, validation

/** The policy a POST body describes, its origin as written (validateTargetPolicy normalises it). */
export const newTargetPolicyFields = (body: TargetPolicyCreateBody): TargetPolicyFields => ({
  origin: body.origin,
  maxConcurrent: body.maxConcurrent ?? null,
  throughput: body.throughput ?? null,
  circuitBreaker: body.circuitBreaker ?? null
})

/** PUT: the body over the stored policy (a present field replaces, null clears, absent keeps). */
export const mergeTargetPolicyUpdate = <P extends TargetPolicyFields>(stored: P, patch: TargetPolicyBody): P => ({ ...stored, ...patch })

export const MAX_COOLDOWN_SECONDS = 3_600

type Rule = (policy: TargetPolicyFields) => string | undefined

const somethingSpecifiedRule: Rule = (p) =>
  p.maxConcurrent === null && p.throughput === null && p.circuitBreaker === null
    ? "At least one of maxConcurrent, throughput or circuitBreaker must be specified"
    : undefined

const failuresRule: Rule = (p) =>
  p.circuitBreaker !== null && p.circuitBreaker.failures < 1 ? "circuitBreaker.failures must be ≥ 1" : undefined

const cooldownRule: Rule = (p) =>
  p.circuitBreaker !== null && (p.circuitBreaker.cooldownSeconds < 1 || p.circuitBreaker.cooldownSeconds > MAX_COOLDOWN_SECONDS)
    ? `circuitBreaker.cooldownSeconds must be between 1 and ${MAX_COOLDOWN_SECONDS}`
    : undefined

/** The messages after the origin's, in order (the limits as a tag policy's: docs/tag-policies.md "Errors"). */
const RULES: ReadonlyArray<Rule> = [somethingSpecifiedRule, ...LIMIT_RULES, failuresRule, cooldownRule]

export type TargetPolicyValidation =
  | { readonly _tag: "Ok"; readonly fields: TargetPolicyFields }
  | { readonly _tag: "Err"; readonly message: string }

/**
 * The first rule the policy breaks (`Invalid origin: <value>` first), or the policy with its origin
 * normalised. A create and an update (the policy as it would be after it) meet the same rules.
 */
export const validateTargetPolicy = (policy: TargetPolicyFields): TargetPolicyValidation => {
  const origin = normaliseOrigin(policy.origin)
  if (origin === null) return { _tag: "Err", message: `Invalid origin: ${policy.origin}` }
  for (const rule of RULES) {
    const message = rule(policy)
    if (message !== undefined) return { _tag: "Err", message }
  }
  return { _tag: "Ok", fields: { ...policy, origin } }
}

// ---------------------------------------------------------------------------------------------
// View

/** What the nodes and the database know of a policy's origin now (for `*`: summed over its origins). */
export interface TargetLive {
  readonly queued: number
  readonly inFlight: number
  readonly heldUntil: Date | null
  readonly circuit: CircuitPhase | null
}

export interface TargetPolicyView extends TargetPolicyFields {
  readonly id: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly queued: number
  readonly inFlight: number
  /** When the origin's hold ends (ISO; a refusal's or an open circuit's); null when not held, and for `*`. */
  readonly heldUntil: string | null
  /** null for `*` (each of its origins has its own: GET /targets). */
  readonly circuit: CircuitPhase | null
}

export const targetPolicyView = (stored: StoredTargetPolicy, live: TargetLive): TargetPolicyView => ({
  id: stored.id,
  origin: stored.origin,
  maxConcurrent: stored.maxConcurrent,
  throughput: stored.throughput === null ? null : { ...stored.throughput },
  circuitBreaker: stored.circuitBreaker === null ? null : { ...stored.circuitBreaker },
  createdAt: stored.createdAt.toISOString(),
  updatedAt: stored.updatedAt.toISOString(),
  queued: live.queued,
  inFlight: live.inFlight,
  heldUntil: stored.origin === ANY_ORIGIN || live.heldUntil === null ? null : live.heldUntil.toISOString(),
  circuit: stored.origin === ANY_ORIGIN ? null : live.circuit
})

/** One origin of GET /targets. */
export interface TargetView {
  readonly origin: string
  readonly policyId: string
  readonly queued: number
  readonly inFlight: number
  readonly heldUntil: string | null
  readonly circuit: CircuitPhase
  readonly consecutiveFailures: number
  /** When the circuit last opened, and the failure that opened it (null: never). */
  readonly circuitOpenedAt: string | null
  readonly circuitReason: string | null
}
