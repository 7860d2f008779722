// What text costs in a JSON answer (docs/reading.md "Large bodies in lists"): jsonTextBytes is exactly
// the UTF-8 length of JSON.stringify's escaping (quotes excluded) for any string — control characters,
// quotes, backslashes, multi-byte characters, surrogate pairs and lone surrogates — and jsonTextPrefix
// is the longest prefix within a byte limit, never splitting a surrogate pair.
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { jsonTextBytes, jsonTextPrefix } from "../../src/domain/jsonSize.ts"

/** The reference: what JSON.stringify writes, in UTF-8 bytes, without the two quotes. */
const stringified = (text: string) => Buffer.byteLength(JSON.stringify(text), "utf8") - 2

/** Any string, weighted toward what escaping and UTF-8 care about. */
const anyText = fc.string({
  unit: fc.oneof(
    fc.constantFrom("\u0000", "\u0001", "\b", "\t", "\n", "\f", "\r", "\u001f", "\"", "\\", "\u007f", "é", "€", "😀", "\ud800", "\udc00"),
    fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 })
  ),
  maxLength: 60
})

describe("jsonTextBytes", () => {
  it.each([
    ["", 0], ["a", 1], ["\u0001", 6], ["\n", 2], ["\"", 2], ["\\", 2], ["\u007f", 1], ["é", 2], ["€", 3], ["😀", 4],
    ["\ud800", 6], ["\udc00", 6], ["\ud800a", 7], ["a\udc00\ud800", 13]
  ] as const)("%j takes %i bytes", (text, bytes) => {
    assert.strictEqual(jsonTextBytes(text), bytes)
    assert.strictEqual(stringified(text), bytes)
  })

  it("is the UTF-8 length of JSON.stringify's escaping for any string", () => {
    fc.assert(fc.property(anyText, (text) => jsonTextBytes(text) === stringified(text)), { numRuns: 2_000 })
  })
})

describe("jsonTextPrefix", () => {
  it("is the longest prefix within the limit, and never splits a surrogate pair", () => {
    fc.assert(fc.property(anyText, fc.integer({ min: 0, max: 200 }), (text, max) => {
      const { text: prefix, cut } = jsonTextPrefix(text, max)
      assert.isTrue(text.startsWith(prefix))
      assert.strictEqual(cut, prefix.length < text.length)
      assert.isAtMost(stringified(prefix), max)
      if (cut) {
        const next = text.codePointAt(prefix.length)!
        assert.isAbove(stringified(prefix + String.fromCodePoint(next)), max)
        // a pair's halves stay together: the prefix does not end with a high surrogate whose low one follows
        const last = prefix.charCodeAt(prefix.length - 1)
        assert.isFalse(last >= 0xd800 && last <= 0xdbff && text.charCodeAt(prefix.length) >= 0xdc00 && text.charCodeAt(prefix.length) <= 0xdfff)
      }
    }), { numRuns: 2_000 })
  })

  it("cuts 65,520 U+0001 to the 10,922 that take 65,532 bytes", () => {
    assert.deepStrictEqual(jsonTextPrefix("\u0001".repeat(65_520), 64 * 1024), { text: "\u0001".repeat(10_922), cut: true })
    assert.deepStrictEqual(jsonTextPrefix("a".repeat(10), 60), { text: "a".repeat(10), cut: false })
  })
})
