// What text costs once written into a JSON answer (docs/reading.md "Large bodies in lists"): the UTF-8
// bytes of a string as JSON.stringify escapes it — `"` and `\` two bytes, \b \t \n \f \r two, any other
// control character six (\u0001), a lone surrogate six (\ud800), other characters their UTF-8 length —
// so a list is bounded by what it sends, not by the raw bytes it read (a body of U+0001 grows
// six-fold). Pure.

/** The encoded size of the UTF-16 unit at `i` of `text` (a surrogate pair counts at its first unit, 4). */
const unitBytes = (text: string, i: number): number => {
  const c = text.charCodeAt(i)
  if (c < 0x20) return c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6
  if (c === 0x22 || c === 0x5c) return 2
  if (c < 0x80) return 1
  if (c < 0x800) return 2
  if (c >= 0xd800 && c <= 0xdbff) {
    const next = text.charCodeAt(i + 1)
    return next >= 0xdc00 && next <= 0xdfff ? 4 : 6
  }
  if (c >= 0xdc00 && c <= 0xdfff) return 6
  return 3
}

/** Whether the unit at `i` is the first half of a surrogate pair (the pair is one character). */
const startsPair = (text: string, i: number): boolean => {
  const c = text.charCodeAt(i)
  if (c < 0xd800 || c > 0xdbff) return false
  const next = text.charCodeAt(i + 1)
  return next >= 0xdc00 && next <= 0xdfff
}

/** The UTF-8 bytes `text` takes inside a JSON string literal, quotes excluded. */
export const jsonTextBytes = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    bytes += unitBytes(text, i)
    if (startsPair(text, i)) i++
  }
  return bytes
}

/**
 * The longest prefix of `text` that takes at most `maxBytes` inside a JSON string literal (a
 * surrogate pair is never split), and whether it is shorter than `text`.
 */
export const jsonTextPrefix = (text: string, maxBytes: number): { readonly text: string; readonly cut: boolean } => {
  // every unit takes at most 6 bytes: short enough texts need no walk
  if (text.length * 6 <= maxBytes) return { text, cut: false }
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const size = unitBytes(text, i)
    if (bytes + size > maxBytes) return { text: text.slice(0, i), cut: true }
    bytes += size
    if (startsPair(text, i)) i++
  }
  return { text, cut: false }
}

/** The UTF-8 bytes of a value written as JSON (JSON.stringify; `undefined` counts as nothing). */
export const jsonBytes = (value: unknown): number => {
  const json = JSON.stringify(value)
  return json === undefined ? 0 : Buffer.byteLength(json, "utf8")
}
