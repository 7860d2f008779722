// Encryption at rest (docs/encryption.md "The keys"): the keys of ENCRYPTION_KEYS
// (`<id>:<base64 of 32 bytes>`, comma-separated, the first one writes) and the codec that seals a
// stored value with AES-256-GCM through node:crypto. A sealed value is `iv (12 bytes) | ciphertext |
// tag (16 bytes)`: its ciphertext is as long as its plain text, so a stored size minus SEAL_OVERHEAD
// is the plain size, and a prefix of it opens to a prefix of the plain text (unauthenticated: only
// to tell a body's encoding in a list that leaves the body out). The id of the key is stored beside
// the value; the additional data binds a value to its purpose (`headers`, `body`) and to that id, so
// a value moved to another column or relabelled with another key does not open.
import * as crypto from "node:crypto"

export interface EncryptionKey {
  readonly id: string
  /** A KeyObject: a cipher made with one is several times faster than with the same bytes as a Buffer (Node 24). */
  readonly key: crypto.KeyObject
}

/** The configured keys: `writer` seals, any of `byId` opens. */
export interface Keyring {
  readonly writer: EncryptionKey
  readonly byId: ReadonlyMap<string, EncryptionKey>
}

/** What a sealed value is: a trigger's headers or body, or the headers a bulk replay adds. */
export type SealPurpose = "headers" | "body" | "replay headers"

const ALGORITHM = "aes-256-gcm"
const IV_BYTES = 12
const TAG_BYTES = 16
/** Bytes a sealed value has beyond its plain text. */
export const SEAL_OVERHEAD = IV_BYTES + TAG_BYTES
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/

/** ENCRYPTION_KEYS as a keyring, or the one-line reason it is not one. */
export const parseEncryptionKeys = (raw: string): Keyring | string => {
  const keys: Array<EncryptionKey> = []
  for (const entry of raw.split(",").map((part) => part.trim())) {
    const colon = entry.indexOf(":")
    const id = colon < 0 ? entry : entry.slice(0, colon)
    if (colon < 0 || !KEY_ID.test(id)) {
      return `each entry must be <id>:<base64 of 32 bytes> with an id of 1-32 letters, digits, _ or -, got "${id}"`
    }
    const text = entry.slice(colon + 1)
    const key = Buffer.from(text, "base64")
    if (key.length !== 32 || key.toString("base64").replace(/=+$/, "") !== text.replace(/=+$/, "")) {
      return `the key "${id}" must be the base64 of 32 bytes (e.g. openssl rand -base64 32)`
    }
    if (keys.some((other) => other.id === id)) return `the key id "${id}" is given twice`
    keys.push({ id, key: crypto.createSecretKey(key) })
  }
  return { writer: keys[0]!, byId: new Map(keys.map((key) => [key.id, key])) }
}

const additionalData = (purpose: SealPurpose, keyId: string) => Buffer.from(`timewheel ${purpose} ${keyId}`)

/** Random ivs drawn 256 at a time (one call to the generator instead of one per value). */
let ivPool = Buffer.alloc(0)
let ivOffset = 0
const nextIv = (): Buffer => {
  if (ivOffset + IV_BYTES > ivPool.length) {
    ivPool = crypto.randomBytes(IV_BYTES * 256)
    ivOffset = 0
  }
  ivOffset += IV_BYTES
  return ivPool.subarray(ivOffset - IV_BYTES, ivOffset)
}

/** `plain` sealed with `key`: iv | ciphertext | tag. */
export const sealBytes = (key: EncryptionKey, purpose: SealPurpose, plain: Uint8Array): Buffer => {
  const iv = nextIv()
  const cipher = crypto.createCipheriv(ALGORITHM, key.key, iv)
  cipher.setAAD(additionalData(purpose, key.id))
  const head = cipher.update(plain)
  const tail = cipher.final()
  return Buffer.concat([iv, head, tail, cipher.getAuthTag()])
}

/**
 * A keyed fingerprint of `plain` (HMAC-SHA256 with `key`, hex): equal for equal values under one key,
 * telling nothing of the value without the key (a stored value's identity, where the sealed value
 * itself differs each time it is sealed).
 */
export const fingerprint = (key: EncryptionKey, purpose: SealPurpose, plain: string): string =>
  crypto.createHmac("sha256", key.key).update(`timewheel ${purpose} fingerprint\n${plain}`).digest("hex")

/** A value that cannot be opened: its key is not configured, or it was altered. */
export class SealedValueError extends Error {
  override readonly name = "SealedValueError"
}

/** The plain text of a sealed value; throws SealedValueError when the key is wrong or the value altered. */
export const openBytes = (key: EncryptionKey, purpose: SealPurpose, sealed: Uint8Array): Buffer => {
  if (sealed.byteLength < SEAL_OVERHEAD) throw new SealedValueError(`A stored ${purpose} value sealed with key "${key.id}" is truncated`)
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)
  const decipher = crypto.createDecipheriv(ALGORITHM, key.key, bytes.subarray(0, IV_BYTES))
  decipher.setAAD(additionalData(purpose, key.id))
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()])
  } catch {
    throw new SealedValueError(`A stored ${purpose} value does not open with key "${key.id}" (altered, or sealed with another key of that id)`)
  }
}

/**
 * The first bytes of a sealed value's plain text, from the first `SEAL_OVERHEAD - 16 + n` bytes of the
 * value (iv and ciphertext prefix). Not authenticated: for telling an encoding, never for a value shown.
 */
export const openPrefix = (key: EncryptionKey, sealedPrefix: Uint8Array): Buffer => {
  const bytes = Buffer.from(sealedPrefix.buffer, sealedPrefix.byteOffset, sealedPrefix.byteLength)
  if (bytes.length <= IV_BYTES) return Buffer.alloc(0)
  return crypto.createDecipheriv(ALGORITHM, key.key, bytes.subarray(0, IV_BYTES)).update(bytes.subarray(IV_BYTES))
}

/** Bytes of a sealed value that hold the first `n` bytes of its plain text (for a SQL substring). */
export const sealedPrefixBytes = (n: number): number => IV_BYTES + n

/** The service refuses to start: stored values are sealed with keys ENCRYPTION_KEYS does not hold. */
export class EncryptionKeysMissing extends Error {
  override readonly name = "EncryptionKeysMissing"
  readonly missing: ReadonlyArray<string>
  constructor(missing: ReadonlyArray<string>, configured: boolean) {
    const ids = missing.map((id) => `"${id}"`).join(", ")
    super(configured
      ? `stored triggers are sealed with the encryption key ${ids}, which ENCRYPTION_KEYS does not hold: add it after the key that writes (keys rotate-encryption then re-seals them with that one)`
      : `stored triggers are sealed with the encryption key ${ids}, but ENCRYPTION_KEYS is not set: set it with that key`)
    this.missing = missing
  }
}

/** The key of a stored value's id; throws SealedValueError naming the setting when it is not configured. */
export const keyFor = (keyring: Keyring | null, keyId: string): EncryptionKey => {
  const key = keyring?.byId.get(keyId)
  if (key === undefined) {
    throw new SealedValueError(`A stored trigger is sealed with the encryption key "${keyId}", which ENCRYPTION_KEYS does not hold`)
  }
  return key
}
