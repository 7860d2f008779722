// Tags rules of ttr-tags, as a table: header value → tags or the first error message.
import { describe, expect, it } from "vitest"
import { isValidTag, parseTagsHeader } from "../../src/domain/tags.ts"

const t50 = "a".repeat(50)
const t51 = "a".repeat(51)
const eleven = Array.from({ length: 11 }, (_, i) => `t${i}`)

describe("parseTagsHeader", () => {
  const rows: ReadonlyArray<readonly [value: string | undefined, expected: ReadonlyArray<string> | string]> = [
    [undefined, []],
    ["", []],
    ["  ", []],
    [",,, ,", []],
    ["a", ["a"]],
    ["billing,emails", ["billing", "emails"]],
    [" billing , emails ", ["billing", "emails"]],
    ["billing,,emails,", ["billing", "emails"]],
    ["b,a,b,c,a", ["b", "a", "c"]],
    ["a-b_c-9", ["a-b_c-9"]],
    [t50, [t50]],
    [eleven.slice(0, 10).join(","), eleven.slice(0, 10)],
    // duplicates and empty entries do not count towards the limit
    [[...eleven.slice(0, 10), "t0", "", "t9"].join(","), eleven.slice(0, 10)],
    [eleven.join(","), "Maximum 10 tags allowed"],
    // the count is checked before any tag
    [[...eleven.slice(0, 10), "BAD!"].join(","), "Maximum 10 tags allowed"],
    [t51, `Tag too long (max 50 chars): ${t51}`],
    ["Billing", "Invalid tag (only a-z 0-9 _ - allowed): Billing"],
    ["a b", "Invalid tag (only a-z 0-9 _ - allowed): a b"],
    ["a.b", "Invalid tag (only a-z 0-9 _ - allowed): a.b"],
    ["café", "Invalid tag (only a-z 0-9 _ - allowed): café"],
    // one tag at a time in listed order, length before characters
    [`ok,${"A".repeat(51)},Bad`, `Tag too long (max 50 chars): ${"A".repeat(51)}`],
    [`ok,Bad,${t51}`, "Invalid tag (only a-z 0-9 _ - allowed): Bad"],
    // 50 code points of a non-ASCII letter are not "too long", only invalid
    ["é".repeat(50), `Invalid tag (only a-z 0-9 _ - allowed): ${"é".repeat(50)}`],
    ["é".repeat(51), `Tag too long (max 50 chars): ${"é".repeat(51)}`]
  ]
  it.each(rows)("%j", (value, expected) => {
    expect(parseTagsHeader(value)).toEqual(
      typeof expected === "string" ? { _tag: "Err", message: expected } : { _tag: "Ok", tags: expected }
    )
  })
})

describe("isValidTag (tag policies)", () => {
  const rows: ReadonlyArray<readonly [string, boolean]> = [
    ["a", true],
    ["a-b_c-9", true],
    [t50, true],
    [t51, false],
    ["", false],
    ["A", false],
    ["a b", false],
    [" a", false],
    ["é", false]
  ]
  it.each(rows)("%j → %s", (tag, expected) => {
    expect(isValidTag(tag)).toBe(expected)
  })
})
