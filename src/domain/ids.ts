// UUIDv7 identifiers (docs/README.md "Conventions"): 48-bit millisecond timestamp, then random bits, so
// ids sort by creation time. The time is passed in (from Effect's Clock); the rest comes from crypto.
import * as crypto from "node:crypto"

/** ASCII codes of the two hex digits of each byte value. */
const HEX_CODES = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0")).map((h) => [h.charCodeAt(0), h.charCodeAt(1)])

/** Random bytes are drawn from the OS in blocks: one call per 256 ids instead of one per id. */
const POOL_IDS = 256
let pool = Buffer.alloc(0)
let poolOffset = 0
/** The id is written here as text and read out as one string: no intermediate strings per id. */
const text = Buffer.alloc(36)
const DASH = 0x2d

export const uuidv7 = (nowMs: number): string => {
  if (poolOffset === pool.length) {
    pool = crypto.randomBytes(16 * POOL_IDS)
    poolOffset = 0
  }
  const at = poolOffset
  poolOffset += 16
  let time = Math.max(0, Math.floor(nowMs))
  for (let i = 5; i >= 0; i--) {
    pool[at + i] = time % 256
    time = Math.floor(time / 256)
  }
  pool[at + 6] = 0x70 | (pool[at + 6]! & 0x0f)
  pool[at + 8] = 0x80 | (pool[at + 8]! & 0x3f)
  let j = 0
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) text[j++] = DASH
    const codes = HEX_CODES[pool[at + i]!]!
    text[j++] = codes[0]!
    text[j++] = codes[1]!
  }
  return text.toString("latin1", 0, 36)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** True for a syntactically valid UUID (any version); ids that are not UUIDs can match nothing. */
export const isUuid = (value: string): boolean => UUID.test(value)
