// Shards spread their periodic work (materializer, recovery, window reads) over the period instead of
// all querying PostgreSQL at the same instant.
import { assert, describe, it } from "@effect/vitest"
import { shardPhase } from "../../src/scheduler/shardActor.ts"

describe("shardPhase", () => {
  it("puts every shard's phase in [0, 1) and shards 0..63 in distinct places", () => {
    const phases = Array.from({ length: 64 }, (_, shard) => shardPhase(shard))
    for (const phase of phases) assert.isTrue(phase >= 0 && phase < 1)
    assert.strictEqual(new Set(phases.map((p) => Math.floor(p * 1000))).size, 64)
  })

  it("spreads 64 shards evenly: each eighth of the period holds 6 to 10 of them", () => {
    const perEighth = Array.from({ length: 8 }, () => 0)
    for (let shard = 0; shard < 64; shard++) perEighth[Math.floor(shardPhase(shard) * 8)]!++
    for (const count of perEighth) assert.isTrue(count >= 6 && count <= 10, `eighths: ${perEighth.join(", ")}`)
  })
})
