// Text PostgreSQL can store (docs/errors.md "Text the database cannot store": a 400 decided before any
// write). A text or jsonb value cannot hold U+0000 (NUL), and UTF-8 has no encoding for an unpaired
// UTF-16 surrogate (U+D800–U+DFFF): the driver would write U+FFFD instead, silently changing the
// value, so both are refused wherever a request's text reaches a query or a row. And index keys have
// a length limit.
import { Buffer } from "node:buffer"

/** The first character of `text` PostgreSQL cannot store, as `U+XXXX`; undefined when there is none. */
export const unstorableCharacter = (text: string): string | undefined => {
  if (text.isWellFormed() && !text.includes("\u0000")) return undefined
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit === 0) return "U+0000"
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
    }
    if (unit >= 0xd800 && unit <= 0xdfff) return `U+${unit.toString(16).toUpperCase()}`
  }
  return undefined
}

/** The message of a 400 for a value holding such a character, naming the field. */
export const unstorableMessage = (field: string, character: string): string =>
  `${field} must not contain ${character}`

/**
 * Custom keys and tags are index keys (migration 3 in store/migrations: the key indexes; the tags' GIN index),
 * and PostgreSQL refuses an index entry over about 2.7 kB: longer ones are a 400 (docs/declare-and-bulk.md
 * "Items"), `customKey must be at most 1024 bytes`, `tags must be at most 1024 bytes each` (the same for
 * /schedule's custom key and /declare's tag).
 */
export const MAX_INDEXED_BYTES = 1024

export const tooLongToIndex = (field: string, text: string, each = ""): string | undefined =>
  text.length * 3 > MAX_INDEXED_BYTES && Buffer.byteLength(text, "utf8") > MAX_INDEXED_BYTES
    ? `${field} must be at most ${MAX_INDEXED_BYTES} bytes${each}`
    : undefined
