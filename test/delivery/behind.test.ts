// How far behind its due times a node sends (delivery/behind.ts): the gauge is the latest send's
// lateness and falls to 0 after a second without sends; a warning only once every send for a second
// was a second or more late (not for one late send), repeated at most once a minute, and one line
// when a send is on time again.
import { assert, describe, it } from "@effect/vitest"
import { BEHIND_REPEAT_MS, type BehindEvent, makeBehindTracker } from "../../src/delivery/behind.ts"

const tracker = () => {
  const events: Array<BehindEvent> = []
  return { events, behind: makeBehindTracker((event) => void events.push(event)) }
}

describe("behind", () => {
  it("the gauge reads the latest send's lateness (never negative), and 0 once nothing was sent for a second", () => {
    const { behind } = tracker()
    assert.strictEqual(behind.behindSeconds(0), 0)
    behind.sent(10_000, 9_750)
    assert.strictEqual(behind.behindSeconds(10_000), 0.25)
    behind.sent(10_100, 10_200) // left early? counted as on time
    assert.strictEqual(behind.behindSeconds(10_500), 0)
    behind.sent(11_000, 8_000)
    assert.strictEqual(behind.behindSeconds(11_999), 3)
    assert.strictEqual(behind.behindSeconds(12_000), 0)
  })

  it("one late send, or late sends within less than a second, are not being behind", () => {
    const { behind, events } = tracker()
    behind.sent(100_000, 40_000) // a run-missed trigger a minute old
    behind.sent(100_001, 100_000)
    for (let t = 200_000; t < 200_999; t += 100) behind.sent(t, t - 1_500)
    behind.sent(201_000, 200_990)
    assert.deepStrictEqual(events, [])
  })

  it("every send a second late for a second: one warning, again only after a minute, then caught up when on time", () => {
    const { behind, events } = tracker()
    for (let t = 0; t <= 3_000; t += 100) behind.sent(t, t - 1_200)
    assert.deepStrictEqual(events, [{ _tag: "Behind", latenessMs: 1_200, forMs: 1_000 }])
    // still behind, sends between the thresholds neither warn nor say caught up
    behind.sent(3_100, 3_100 - 500)
    for (let t = 3_200; t <= BEHIND_REPEAT_MS + 2_000; t += 500) behind.sent(t, t - 2_000)
    assert.strictEqual(events.length, 2)
    assert.deepStrictEqual(events[1]!._tag, "Behind")
    behind.sent(BEHIND_REPEAT_MS + 3_000, BEHIND_REPEAT_MS + 3_000 - 50)
    assert.deepStrictEqual(events[2], { _tag: "CaughtUp", behindForMs: BEHIND_REPEAT_MS + 3_000 })
    behind.sent(BEHIND_REPEAT_MS + 3_100, BEHIND_REPEAT_MS + 3_100)
    assert.strictEqual(events.length, 3)
  })
})
