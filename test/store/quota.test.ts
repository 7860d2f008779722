// How one batched quota grant is shared among the calls of a batch, in arrival order.
import { describe, expect, it } from "vitest"
import { monthOf, splitGrant } from "../../src/store/quota.ts"

describe("splitGrant", () => {
  const rows: ReadonlyArray<[string, { before: number; after: number; quota: number }, number, ReadonlyArray<string>]> = [
    ["all granted", { before: 0, after: 3, quota: 10 }, 3, ["9", "8", "7"]],
    ["the last unit", { before: 9, after: 10, quota: 10 }, 1, ["0"]],
    ["partly granted: the first calls win", { before: 8, after: 10, quota: 10 }, 4, ["1", "0", "402 of 10", "402 of 10"]],
    ["nothing left", { before: 10, after: 10, quota: 10 }, 2, ["402 of 10", "402 of 10"]],
    ["quota lowered below usage", { before: 12, after: 12, quota: 5 }, 1, ["402 of 5"]],
    ["a zero quota", { before: 0, after: 0, quota: 0 }, 1, ["402 of 0"]]
  ]
  for (const [name, grant, calls, expected] of rows) {
    it(name, () => {
      expect(splitGrant(grant, calls).map((r) => r._tag === "Consumed" ? String(r.remaining) : `402 of ${r.limit}`)).toEqual(expected)
    })
  }
})

describe("monthOf", () => {
  it("is the first day of the UTC calendar month", () => {
    expect(monthOf(Date.UTC(2026, 10, 30, 23, 59, 59, 999))).toBe("2026-11-01")
    expect(monthOf(Date.UTC(2026, 11, 1, 0, 0, 0, 0))).toBe("2026-12-01")
  })
})
