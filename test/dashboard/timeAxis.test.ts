// The charts' time labels (web/timeAxis.ts): `HH:MM` within a day and the date itself at midnight, in
// UTC — never the month-day pairs (`05-01 11-01`) that read like times.
import { assert, describe, it } from "@effect/vitest"
import { bucketName, pointLabel, timeLabel } from "../../web/timeAxis.ts"

const at = (iso: string) => Date.parse(iso) / 1000

describe("chart time labels", () => {
  it.each([
    ["2030-05-01T11:05:00Z", "11:05"],
    ["2030-05-01T00:00:00Z", "May 1"],
    ["2030-11-27T00:00:00Z", "Nov 27"],
    ["2030-01-02T23:45:00Z", "23:45"],
    ["2030-01-02T00:15:00Z", "00:15"]
  ] as const)("%s → %s", (iso, label) => {
    assert.strictEqual(timeLabel(at(iso)), label)
  })

  it("a point in the legend, and the bucket in a title", () => {
    assert.strictEqual(pointLabel(at("2030-01-02T11:15:30Z")), "2030-01-02 11:15 UTC")
    assert.deepStrictEqual([60, 300, 900].map(bucketName), ["minute", "5 minutes", "15 minutes"])
  })
})
