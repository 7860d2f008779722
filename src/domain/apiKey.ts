// API keys (docs/README.md "Conventions"): `<prefix>_` + 48 lowercase hex characters, stored only
// as a SHA-256 hash; the clear key is shown once.
import * as crypto from "node:crypto"

export const generateApiKey = (prefix: string): string => `${prefix}_${crypto.randomBytes(24).toString("hex")}`

export const hashApiKey = (key: string): Uint8Array => new Uint8Array(crypto.hash("sha256", key, "buffer"))

/** The key's SHA-256 as base64: the hash as a map key (four times cheaper than the bytes). */
export const apiKeyHashId = (key: string): string => crypto.hash("sha256", key, "base64")

/** What listings show of a key: its prefix and last four characters. */
export const apiKeyHint = (key: string): string => `${key.slice(0, key.indexOf("_") + 1)}…${key.slice(-4)}`
