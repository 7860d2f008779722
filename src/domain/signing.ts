// Signed deliveries (DECISIONS "What a target sees beyond the stored request"): every delivery carries
// the trigger id, the attempt number and `Timewheel-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<body bytes>">`, one `v1=` per signing secret of the project — two while a secret is being
// rotated (the new one first), for SIGNING_SECRET_OVERLAP_MS. A secret is `whsec_` + 64 hex
// characters, used whole (prefix included, as UTF-8) as the HMAC key.
import * as crypto from "node:crypto"

export const TRIGGER_ID_HEADER = "Timewheel-Trigger-Id"
export const ATTEMPT_HEADER = "Timewheel-Attempt"
export const SIGNATURE_HEADER = "Timewheel-Signature"
/** The headers above in lowercase: a stored header of one of these names is replaced by ours. */
export const SIGNING_HEADERS_LOWER: ReadonlySet<string> = new Set(
  [TRIGGER_ID_HEADER, ATTEMPT_HEADER, SIGNATURE_HEADER].map((name) => name.toLowerCase())
)

/** How long the previous secret goes on signing after a rotation, by default. */
export const SIGNING_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000
/** The longest overlap `project secret rotate --overlap-hours` accepts (30 days). */
export const MAX_SIGNING_SECRET_OVERLAP_HOURS = 720

export const SIGNING_SECRET_PATTERN = /^whsec_[0-9a-f]{64}$/

/** A new signing secret: 256 random bits. */
export const generateSigningSecret = (): string => `whsec_${crypto.randomBytes(32).toString("hex")}`

const EMPTY = new Uint8Array(0)

/** Hex HMAC-SHA256 of `<t>.<body bytes>` with one secret. */
export const signatureV1 = (secret: string, timestampSeconds: number, body: Uint8Array | null): string =>
  crypto.createHmac("sha256", secret).update(`${timestampSeconds}.`).update(body ?? EMPTY).digest("hex")

/** The `Timewheel-Signature` value: `t=<t>,v1=<hex>[,v1=<hex>]`, one `v1` per secret, in the given order. */
export const signatureHeader = (secrets: ReadonlyArray<string>, timestampSeconds: number, body: Uint8Array | null): string => {
  let value = `t=${timestampSeconds}`
  for (const secret of secrets) value += `,v1=${signatureV1(secret, timestampSeconds, body)}`
  return value
}
