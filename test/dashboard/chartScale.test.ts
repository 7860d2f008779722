// The charts' value axis (web/chartScale.ts): counts tick at whole numbers only and their axis top is
// a whole number; a chart whose values are all missing or 0 has nothing to show. And one time format
// across the dashboard: no page formats a time on its own (ui.ts formatTime, UTC, for every time;
// timeAxis.ts for the charts).
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { COUNT_STEPS, countAxisMax, countLabel, nothingToShow } from "../../web/chartScale.ts"

const WEB = path.resolve(import.meta.dirname, "..", "..", "web")

describe("chart value axis", () => {
  it("count ticks are whole numbers; the axis top too", () => {
    for (const step of COUNT_STEPS) assert.isTrue(Number.isInteger(step), String(step))
    assert.deepStrictEqual([0, 1, 2, 7, 100].map(countAxisMax), [1, 2, 3, 9, 115])
    assert.deepStrictEqual([3, 2.4, 12345].map(countLabel), ["3", "2", "12,345"])
  })

  it("nothing to show: no point, or every value missing or 0", () => {
    assert.isTrue(nothingToShow([]))
    assert.isTrue(nothingToShow([[], []]))
    assert.isTrue(nothingToShow([[null, 0], [0, null]]))
    assert.isFalse(nothingToShow([[null, 0], [0, 1]]))
  })

  it("one time format: no page formats a time in the browser's own way", () => {
    const files = fs.readdirSync(WEB, { recursive: true }).map(String).filter((file) => file.endsWith(".ts"))
    assert.isAbove(files.length, 10)
    for (const file of files) {
      const text = fs.readFileSync(path.join(WEB, file), "utf8")
      assert.notMatch(text, /toLocale(Time|Date)String|toUTCString|toDateString|toTimeString/, file)
    }
  })
})
