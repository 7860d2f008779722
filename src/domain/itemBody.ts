// What an item of /declare or /bulk sends (docs/declare-and-bulk.md "The body", "Headers"):
// its `body` JSON value turned into the stored bytes, and its `headers` object turned into the
// stored header pairs. Pure: JSON values in, bytes and pairs out.
import { Buffer } from "node:buffer"
import type { HeaderPairs } from "./trigger.ts"

/**
 * UTF-8 bytes of a text, as plain bytes viewing Node's shared pool when the text is short
 * (Buffer.from places it there), where TextEncoder gave every body an ArrayBuffer of its own: a
 * /bulk call of 1,000 items made 1,000 of them for the garbage collector.
 */
const utf8 = (text: string): Uint8Array => {
  const bytes = Buffer.from(text, "utf8")
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** Bytes, or null for "no body": an empty result is never stored as a zero-length body. */
const bytesOrNull = (bytes: Uint8Array): Uint8Array | null => (bytes.byteLength === 0 ? null : bytes)

const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Everything that is not a letter, digit, `+`, `/` or the padding `=`: skipped (so `-`, `_`, whitespace). */
const OUTSIDE_BASE64_ALPHABET = /[^A-Za-z0-9+/=]/g

/**
 * Lenient base64 (RFC 4648 standard alphabet): characters outside `A–Z a–z 0–9 + / =` are skipped
 * without an error (whitespace, and the url-safe `-` and `_` too: they are not in the base64
 * alphabet); the first `=` ends the data (padding), anything after it is ignored; a last lone
 * character (6 bits, not a whole byte) is dropped.
 */
export const decodeLenientBase64 = (text: string): Uint8Array => {
  const kept = text.replace(OUTSIDE_BASE64_ALPHABET, "")
  const end = kept.indexOf("=")
  const data = end === -1 ? kept : kept.slice(0, end)
  return new Uint8Array(Buffer.from(data, "base64"))
}

/** `{"_tag": "text" | "base64", "value": <string>}` (other fields ignored), else undefined. */
const taggedString = (value: unknown): { readonly tag: "text" | "base64"; readonly value: string } | undefined => {
  if (!isPlainObject(value) || typeof value.value !== "string") return undefined
  return value._tag === "text" || value._tag === "base64" ? { tag: value._tag, value: value.value } : undefined
}

/**
 * The stored body of an item. Omitted (undefined) or null: no body. `{_tag:"text", value:<string>}`:
 * the value as UTF-8; `{_tag:"base64", value:<string>}`: the decoded bytes (decodeLenientBase64);
 * an empty result of either is no body. Anything else — object (another `_tag`, a non-string
 * value), array, number, boolean, string — is compact JSON (`JSON.stringify` of the parsed value,
 * so a string keeps its quotes). No content type is implied: the definition's `contentType` is null.
 */
export const encodeItemBody = (value: unknown): Uint8Array | null => {
  if (value === undefined || value === null) return null
  const tagged = taggedString(value)
  if (tagged === undefined) return utf8(JSON.stringify(value))
  return bytesOrNull(tagged.tag === "text" ? utf8(tagged.value) : decodeLenientBase64(tagged.value))
}

/**
 * Item headers as stored pairs: names lowercased, values unchanged, in the object's key order.
 * Nothing is filtered (prefixed headers, Host, Content-Length and hop-by-hop headers are kept:
 * delivery drops Content-Length and fails the forbidden ones). Values must already be strings.
 */
export const itemHeaderPairs = (headers: Readonly<Record<string, string>>): HeaderPairs => {
  const pairs: Array<readonly [string, string]> = []
  // own keys in Object.entries' order; a loop makes no array of entries for each item of a call
  for (const name in headers) {
    if (Object.hasOwn(headers, name)) pairs.push([name.toLowerCase(), headers[name]!])
  }
  return pairs
}
