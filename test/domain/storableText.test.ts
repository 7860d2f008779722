// Text PostgreSQL can store (docs/errors.md "Text the database cannot store"): NUL and unpaired UTF-16
// surrogates are found and named; everything else (Latin-1 decoded bytes, astral characters, U+FFFD)
// passes.
import { describe, expect, it } from "vitest"
import { unstorableHeader } from "../../src/api/scheduleRequest.ts"
import { unstorableCharacter, unstorableMessage } from "../../src/domain/storableText.ts"

describe("unstorableCharacter", () => {
  const rows: ReadonlyArray<readonly [string, string | undefined]> = [
    ["", undefined],
    ["plain ascii", undefined],
    ["tab\tand latin-1 \u0080\u00ff", undefined],
    ["emoji 😀 pair", undefined],
    ["\ufffd\ufffd\ufffd (how %ED%A0%80 decodes)", undefined],
    ["\u0000", "U+0000"],
    ["a\u0000b", "U+0000"],
    ["lone high \ud800", "U+D800"],
    ["lone low \udc00 x", "U+DC00"],
    ["reversed pair \ude00\ud83d", "U+DE00"],
    ["high at the end \udbff", "U+DBFF"],
    ["😀\u0000", "U+0000"]
  ]
  it.each(rows)("%j", (text, expected) => {
    expect(unstorableCharacter(text)).toBe(expected)
  })

  it("names the field in its message", () => {
    expect(unstorableMessage("customKey", "U+0000")).toBe("customKey must not contain U+0000")
  })
})

describe("unstorableHeader (/schedule)", () => {
  it("names the first header whose name or value holds such a character", () => {
    expect(unstorableHeader(["X-A", "ok", "Accept", "\u00ff latin-1"])).toBeUndefined()
    expect(unstorableHeader(["X-A", "ok", "X-Bad", "a\u0000b", "X-Other", "\ud800"])).toBe("header x-bad must not contain U+0000")
    expect(unstorableHeader(["X-\ud800", "v"])).toBe("header x-\ud800 must not contain U+D800")
  })
})
