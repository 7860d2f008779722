// How deep a JSON document nests (docs/errors.md "The format": 256 levels): JSON.parse reads any depth,
// but what walks the parsed value afterwards — JSON.stringify of an item's body, schema decoders —
// recurses once per level and overflows the stack somewhere past a few thousand levels. A body nested
// deeper than MAX_JSON_DEPTH is therefore refused before it is parsed, like invalid JSON. Pure: one
// pass over the text, strings skipped, no allocation.

/** The deepest nesting of arrays and objects a JSON body may have. */
export const MAX_JSON_DEPTH = 256

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/**
 * Where the string opened by the quote at `open` closes: the next quote after an even number of
 * backslashes (an escaped quote does not close it); -1 when it never closes.
 */
const closingQuote = (text: string, open: number): number => {
  let at = text.indexOf('"', open + 1)
  while (at !== -1) {
    let backslashes = 0
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return at
    at = text.indexOf('"', at + 1)
  }
  return -1
}

/** Whether `text` opens more than `max` arrays or objects inside one another (outside strings, skipped whole). */
export const nestsDeeperThan = (text: string, max: number = MAX_JSON_DEPTH): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = closingQuote(text, i)
      if (i === -1) return false
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  return false
}
