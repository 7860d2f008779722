// Signed deliveries (docs/signatures.md). Every delivery carries
// the trigger id, the attempt number and the Standard Webhooks headers: `webhook-id` (the trigger id,
// the same on every attempt), `webhook-timestamp` (unix seconds when the request leaves) and
// `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body bytes>">`, one per signing
// secret of the project, space-separated: two while a secret is being rotated, the new one first, for
// SIGNING_SECRET_OVERLAP_MS). Beside them the earlier `Timewheel-Signature: t=<t>,v1=<hex HMAC of
// "<t>.<body bytes>">` is kept for targets that already verify it (docs/signatures.md says why).
//
// A secret is in the Standard Webhooks encoding: `whsec_` + base64 of its 32 key bytes. Secrets of the
// earlier format (`whsec_` + 64 hex characters, the whole string the HMAC key) were rewritten by
// migration 9 to `whsec_` + base64(SHA-256(old string)): HMAC hashes a key longer than its 64-byte
// block before use, so those key bytes sign exactly as the old string did and every signature a
// target verified with its old secret still verifies with it.
import * as crypto from "node:crypto"

export const TRIGGER_ID_HEADER = "Timewheel-Trigger-Id"
export const ATTEMPT_HEADER = "Timewheel-Attempt"
export const SIGNATURE_HEADER = "Timewheel-Signature"
export const WEBHOOK_ID_HEADER = "webhook-id"
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp"
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature"
/** The headers above in lowercase: a stored header of one of these names is replaced by ours. */
export const SIGNING_HEADERS_LOWER: ReadonlySet<string> = new Set(
  [TRIGGER_ID_HEADER, ATTEMPT_HEADER, SIGNATURE_HEADER, WEBHOOK_ID_HEADER, WEBHOOK_TIMESTAMP_HEADER, WEBHOOK_SIGNATURE_HEADER]
    .map((name) => name.toLowerCase())
)

/** How long the previous secret goes on signing after a rotation, by default. */
export const SIGNING_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000
/** The longest overlap `project secret rotate --overlap-hours` accepts (30 days). */
export const MAX_SIGNING_SECRET_OVERLAP_HOURS = 720

const SECRET_PREFIX = "whsec_"
/** A secret as the service makes them: `whsec_` + base64 of 32 bytes. */
export const SIGNING_SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/

/** A new signing secret: 256 random bits. */
export const generateSigningSecret = (): string => `${SECRET_PREFIX}${crypto.randomBytes(32).toString("base64")}`

/**
 * The Standard Webhooks secret signing as a secret of the earlier format did: its key bytes are the
 * SHA-256 of the old string (what HMAC-SHA256 keys with when given that 70-byte string). Migration 9
 * does the same in SQL.
 */
export const standardFormOfLegacySecret = (legacy: string): string =>
  `${SECRET_PREFIX}${crypto.createHash("sha256").update(legacy, "utf8").digest("base64")}`

/**
 * Keys by secret: a delivery signs with the same few secrets again and again. KeyObjects: an HMAC
 * keyed with one takes about 3 µs here, with the same bytes as a Buffer about 18 µs (Node 24).
 */
const keys = new Map<string, crypto.KeyObject>()
const MAX_CACHED_KEYS = 10_000

/** The HMAC key of a secret: the base64 after `whsec_` decoded (as Standard Webhooks libraries do). */
export const signingKeyOf = (secret: string): crypto.KeyObject => {
  let key = keys.get(secret)
  if (key === undefined) {
    if (keys.size >= MAX_CACHED_KEYS) keys.clear()
    key = crypto.createSecretKey(Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64"))
    keys.set(secret, key)
  }
  return key
}

const EMPTY = new Uint8Array(0)

const hmac = (secret: string, prefix: string, body: Uint8Array | null) =>
  crypto.createHmac("sha256", signingKeyOf(secret)).update(prefix).update(body ?? EMPTY)

/** The `webhook-signature` value: `v1,<base64>` per secret, in the given order, space-separated. */
export const webhookSignature = (
  secrets: ReadonlyArray<string>,
  id: string,
  timestampSeconds: number,
  body: Uint8Array | null
): string => {
  const signed = `${id}.${timestampSeconds}.`
  let value = ""
  for (const secret of secrets) value += `${value === "" ? "" : " "}v1,${hmac(secret, signed, body).digest("base64")}`
  return value
}

/** Hex HMAC-SHA256 of `<t>.<body bytes>` with one secret (the `Timewheel-Signature` scheme). */
export const signatureV1 = (secret: string, timestampSeconds: number, body: Uint8Array | null): string =>
  hmac(secret, `${timestampSeconds}.`, body).digest("hex")

/** The `Timewheel-Signature` value: `t=<t>,v1=<hex>[,v1=<hex>]`, one `v1` per secret, in the given order. */
export const signatureHeader = (secrets: ReadonlyArray<string>, timestampSeconds: number, body: Uint8Array | null): string => {
  let value = `t=${timestampSeconds}`
  for (const secret of secrets) value += `,v1=${signatureV1(secret, timestampSeconds, body)}`
  return value
}
