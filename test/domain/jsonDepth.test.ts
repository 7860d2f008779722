// The nesting limit of JSON bodies (docs/errors.md "The format"): nestsDeeperThan counts arrays and
// objects opened inside one another, never brackets inside strings (escaped quotes included), and
// agrees with the depth of the parsed value for any JSON.
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../src/domain/jsonDepth.ts"

/** The depth of a parsed value, the reference. */
const depthOf = (value: unknown): number =>
  typeof value === "object" && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0

describe("nestsDeeperThan", () => {
  it.each([
    ["1", 0], ["[]", 1], ["{}", 1], ["[[]]", 2], ["{\"a\":[{}]}", 3], ["\"[[[[\"", 0], ["[\"\\\"[[\"]", 1], ["[\"\\\\\",[]]", 2]
  ] as const)("%s nests %i deep", (text, depth) => {
    assert.isFalse(nestsDeeperThan(text, depth))
    if (depth > 0) assert.isTrue(nestsDeeperThan(text, depth - 1))
  })

  it("agrees with the parsed value's depth for any JSON", () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 8 }), (value, max) => {
      const text = JSON.stringify(value)
      return nestsDeeperThan(text, max) === depthOf(JSON.parse(text)) > max
    }), { numRuns: 1_000 })
  })

  it(`${MAX_JSON_DEPTH} levels pass, one more does not; 200,000 levels are answered at once`, () => {
    assert.isFalse(nestsDeeperThan(`${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`))
    assert.isTrue(nestsDeeperThan(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`))
    assert.isTrue(nestsDeeperThan(`{"a":${"[".repeat(200_000)}`))
  })
})
