// The digest of an item's compared fields (docs/declare-and-bulk.md "What the call does": the time or
// cron expression and zone, url, method, headers, body, title, tags, retry), stored by /declare with
// each trigger it writes (migration 20 in store/migrations) so that its next call finds an unchanged
// item by comparing one value instead of reading and comparing every field. Two items get the same
// digest exactly when nothing differs between them as itemMatch.ts compares them: headers in their
// comparable form (names lowercased, sorted, the content type as a header), tags as a set, the body's
// bytes. Without ENCRYPTION_KEYS, SHA-256: the fields are stored plain beside it anyway. With it, an
// HMAC-SHA256 under a key derived from the writing key, which is not in the database: the digest of
// sealed headers and a sealed body tells nothing of them (no guess can be checked against it).
import * as crypto from "node:crypto"
import type { Item } from "./item.ts"
import { comparableHeaders } from "./itemMatch.ts"
import type { Keyring } from "./sealing.ts"
import type { HeaderPairs } from "./trigger.ts"

/** The key of the digests of a keyring (its writing key), derived once; null without keys. */
export type DigestKey = crypto.KeyObject | null

const derived = new WeakMap<Keyring, crypto.KeyObject>()

export const digestKeyOf = (keyring: Keyring | null): DigestKey => {
  if (keyring === null) return null
  let key = derived.get(keyring)
  if (key === undefined) {
    key = crypto.createSecretKey(crypto.createHmac("sha256", keyring.writer.key).update("timewheel declare item digest").digest())
    derived.set(keyring, key)
  }
  return key
}

const sortedTags = (tags: ReadonlyArray<string>): ReadonlyArray<string> =>
  tags.length < 2 ? tags : [...tags].sort()

/** Headers already in their comparable form (no content type apart, names lowercase and sorted) are used as they are. */
const headersCompared = (d: Item["definition"]): HeaderPairs => {
  const pairs = d.headers
  if (d.contentType !== null) return comparableHeaders(d)
  for (let i = 0; i < pairs.length; i++) {
    const name = pairs[i]![0]
    if (name !== name.toLowerCase() || (i > 0 && pairs[i - 1]![0] > name)) return comparableHeaders(d)
  }
  return pairs
}

/** Bytes as latin1 text, a character per byte (short bodies without a Buffer). */
const latin1 = (bytes: Uint8Array): string =>
  bytes.byteLength <= 4_096
    ? String.fromCharCode.apply(null, bytes as unknown as Array<number>)
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1")

/**
 * The compared fields as one JSON text: a one-shot's time or a generator's cron expression and zone,
 * then url, method, comparable headers, body (its bytes as latin1 characters; null: none), title,
 * sorted tags, and the retry policy's fields in a fixed order. JSON keeps each value apart.
 */
export const comparedText = (item: Item): string => {
  const d = item.definition
  const schedule = item.schedule._tag === "Once" ? item.schedule.fireAtMs : [item.schedule.cronExpr, item.schedule.cronTz]
  const body = d.body === null ? null : latin1(d.body)
  const retry = d.retry === null
    ? null
    : [d.retry.strategy, d.retry.maxAttempts, d.retry.initialDelaySeconds, d.retry.maxDelaySeconds, d.retry.jitter, d.retry.retryOn]
  return JSON.stringify([schedule, d.url, d.method, headersCompared(d), body, d.title, sortedTags(d.tags), retry])
}

/** The item's digest (base64): SHA-256 of its compared text, or its HMAC-SHA256 under `key`. */
export const itemDigest = (item: Item, key: DigestKey): string =>
  key === null
    ? crypto.hash("sha256", comparedText(item), "base64")
    : crypto.createHmac("sha256", key).update(comparedText(item)).digest("base64")
