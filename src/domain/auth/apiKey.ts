// API keys (docs/README.md "Conventions"): `<prefix>_` + 48 lowercase hex characters, stored only
// as a SHA-256 hash; the clear key is shown once.
import * as crypto from "node:crypto"

export const generateApiKey = (prefix: string): string => `${prefix}_${crypto.randomBytes(24).toString("hex")}`

export const hashApiKey = (key: string): Uint8Array => new Uint8Array(crypto.hash("sha256", key, "buffer"))

/** The key's SHA-256 as base64: the hash as a map key (four times cheaper than the bytes). */
export const apiKeyHashId = (key: string): string => crypto.hash("sha256", key, "base64")

/** What listings show of a key: its prefix and last four characters. */
export const apiKeyHint = (key: string): string => `${key.slice(0, key.indexOf("_") + 1)}…${key.slice(-4)}`

/** The longest label a key may carry, in characters (docs/settings.md, `key create`). */
export const MAX_KEY_LABEL_LENGTH = 100

/**
 * A key's label as given: trimmed, `null` when empty or absent; or the 400's message when it is not
 * text, is longer than 100 characters, or holds a control character or one PostgreSQL cannot store.
 */
export const parseKeyLabel = (raw: unknown): { readonly label: string | null } | { readonly problem: string } => {
  if (raw === undefined || raw === null) return { label: null }
  if (typeof raw !== "string") return { problem: "label must be a string" }
  const label = raw.trim()
  if (label === "") return { label: null }
  if (label.length > MAX_KEY_LABEL_LENGTH) return { problem: `label must be at most ${MAX_KEY_LABEL_LENGTH} characters` }
  if (/[\u0000-\u001f\u007f]/.test(label) || !label.isWellFormed()) return { problem: "label must not contain control characters or unpaired surrogates" }
  return { label }
}
