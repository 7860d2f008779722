// Shards fire on one grid of instants (shardActor.ts fireReach, fireInstantFor): a fire at a grid
// instant reaches 230 ms past it and no further, and every trigger is first reached by a fire
// 130 to 230 ms before its time, so the fire's round trip is not part of its lateness.
import { assert, describe, it } from "@effect/vitest"
import { SCHEDULER_TIMING } from "../../src/config.ts"
import { fireInstantFor, fireReach } from "../../src/scheduler/shardActor.ts"

const timing = SCHEDULER_TIMING
const REACH_MS = timing.claimLeadMs + timing.fireWindowMs

describe("the fire grid", () => {
  it("fires at grid instants, each trigger first reached 130 to 230 ms before its time", () => {
    for (let dueAtMs = 1_700_000_000_000; dueAtMs < 1_700_000_000_000 + 1_000; dueAtMs += 7) {
      const fireAtMs = fireInstantFor(dueAtMs, timing)
      assert.strictEqual(fireAtMs % timing.fireEveryMs, 0)
      assert.isAtLeast(fireReach(fireAtMs, timing), dueAtMs, "its fire reaches it")
      assert.isBelow(fireReach(fireAtMs - 1, timing), dueAtMs, "the grid instant before does not")
      assert.isAtLeast(dueAtMs - fireAtMs, REACH_MS - timing.fireEveryMs)
      assert.isAtMost(dueAtMs - fireAtMs, REACH_MS)
    }
  })

  it("never reaches more than 230 ms ahead of the clock, whenever a shard wakes", () => {
    for (let nowMs = 1_700_000_000_000; nowMs < 1_700_000_000_000 + 500; nowMs += 3) {
      assert.isAtMost(fireReach(nowMs, timing) - nowMs, REACH_MS)
      assert.isAbove(fireReach(nowMs, timing) - nowMs, REACH_MS - timing.fireEveryMs)
    }
  })

  it("is the same grid for every shard and node: shards firing in the same moment share a round", () => {
    const due = [1_700_000_000_140, 1_700_000_000_150, 1_700_000_000_199]
    assert.strictEqual(new Set(due.map((d) => fireInstantFor(d, timing))).size, 1)
  })
})
