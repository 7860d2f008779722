// The limits of a gate as tables (docs/tag-policies.md "Throughput windows and rates"): throughput →
// windows (stretching, pause, a broken window failing closed), a policy's limits, and the stable shard
// of a gate.
import { describe, expect, it } from "vitest"
import { effectiveWindows, gateShardOf, limitsSomething, policyLimits } from "../../src/domain/gates/gate.ts"
import type { GateLimits } from "../../src/domain/gates/gate.ts"
import type { Throughput } from "../../src/domain/gates/throughput.ts"

describe("effectiveWindows: throughput → { label, windowMs, limit }", () => {
  const rows: ReadonlyArray<readonly [throughput: Throughput | null, expected: GateLimits]> = [
    [null, { paused: false, windows: [] }],
    [{ "1s": 10 }, { paused: false, windows: [{ label: "1s", windowMs: 1_000, limit: 10 }] }],
    [{ "1s": 1 }, { paused: false, windows: [{ label: "1s", windowMs: 1_000, limit: 1 }] }],
    [{ "1s": 2.5 }, { paused: false, windows: [{ label: "1s", windowMs: 1_000, limit: 2 }] }],
    [{ "1m": 0.5 }, { paused: false, windows: [{ label: "1m", windowMs: 120_000, limit: 1 }] }],
    [{ "1h": 0.25 }, { paused: false, windows: [{ label: "1h", windowMs: 4 * 3_600_000, limit: 1 }] }],
    [{ "10d": 0.3333333333333333 }, { paused: false, windows: [{ label: "10d", windowMs: 30 * 86_400_000, limit: 1 }] }],
    [{ "15m": 100, "2h": 500, "7d": 9000 }, {
      paused: false,
      windows: [
        { label: "15m", windowMs: 900_000, limit: 100 },
        { label: "2h", windowMs: 7_200_000, limit: 500 },
        { label: "7d", windowMs: 604_800_000, limit: 9000 }
      ]
    }],
    [{ "1s": 0 }, { paused: true, windows: [] }],
    [{ "1s": 0, "1m": 5 }, { paused: true, windows: [{ label: "1m", windowMs: 60_000, limit: 5 }] }],
    // never stored (decoding refuses them), but a broken policy fails closed
    [{ "1w": 1 }, { paused: true, windows: [] }],
    [{ "1s": -1 }, { paused: true, windows: [] }]
  ]
  it.each(rows)("%j", (throughput, expected) => {
    expect(effectiveWindows(throughput)).toEqual(expected)
  })
})

describe("policyLimits and limitsSomething", () => {
  it.each([
    [{ maxConcurrent: 3, throughput: null }, true],
    [{ maxConcurrent: null, throughput: { "1s": 5 } }, true],
    [{ maxConcurrent: null, throughput: { "1s": 0 } }, false],
    [{ maxConcurrent: null, throughput: null }, false]
  ] as const)("%j limits something: %s", (policy, limits) => {
    expect(limitsSomething(policyLimits(policy))).toBe(limits)
  })

  it("a paused policy is paused whatever else it limits", () => {
    expect(policyLimits({ maxConcurrent: 5, throughput: { "1s": 0 } })).toEqual({ maxConcurrent: 5, paused: true, windows: [] })
  })
})

describe("gateShardOf", () => {
  it("is stable and within the shards", () => {
    const shard = gateShardOf("0190b1c2-0000-7000-8000-000000000001", "billing", 64)
    expect(shard).toBe(gateShardOf("0190b1c2-0000-7000-8000-000000000001", "billing", 64))
    expect(shard).toBeGreaterThanOrEqual(0)
    expect(shard).toBeLessThan(64)
  })
})
