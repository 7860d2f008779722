// How nodes share a gate's budget (docs/tag-policies.md "How the limits hold across nodes"), as tables:
// max-min fair shares by demand, and what one node holds after its lease round — its share taken from
// what nobody holds, given back down to it only as far as it has units not in use (it then starts
// nothing beyond its share), and nothing of what gone nodes still reserve.
import { describe, expect, it } from "vitest"
import { fairShares, planUnits } from "../../src/domain/gates/gateLease.ts"

describe("fairShares(limit, demands)", () => {
  it.each([
    [20, [100, 100, 100], [7, 7, 6]],
    [20, [3, 100, 100], [3, 9, 8]],
    [20, [3, 4, 5], [3, 4, 5]],
    [100, [1_000, 0, 0], [100, 0, 0]],
    [10, [0, 0], [0, 0]],
    [1, [5, 5, 5], [1, 0, 0]],
    [1000, [400, 400, 400], [334, 333, 333]],
    [7, [], []]
  ] as const)("%d among %j → %j", (limit, demands, shares) => {
    const got = fairShares(limit, demands)
    expect(got).toEqual(shares)
    expect(got.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(limit)
  })

  it("never gives a node more than it wants, and hands out the whole limit when the demands add up to it", () => {
    for (let limit = 1; limit < 40; limit++) {
      const demands = [limit, 1, Math.ceil(limit / 3), 0]
      const shares = fairShares(limit, demands)
      shares.forEach((share, i) => expect(share).toBeLessThanOrEqual(demands[i]!))
      expect(shares.reduce((a, b) => a + b, 0)).toBe(Math.min(limit, demands.reduce((a, b) => a + b, 0)))
    }
  })
})

describe("planUnits: what this node (index `mine`) holds after its round", () => {
  const rows: ReadonlyArray<readonly [string, Parameters<typeof planUnits>[0], ReturnType<typeof planUnits>]> = [
    ["alone with demand: the whole limit",
      { limit: 100, nodes: [{ held: 0, demand: 100 }], mine: 0, reserved: 0, giveable: 0 }, { held: 100, share: 100 }],
    ["its share of three with demand",
      { limit: 20, nodes: [{ held: 7, demand: 20 }, { held: 0, demand: 20 }, { held: 7, demand: 20 }], mine: 1, reserved: 0, giveable: 0 }, { held: 6, share: 7 }],
    ["its share, but only what nobody holds: the others give back in their rounds",
      { limit: 20, nodes: [{ held: 15, demand: 20 }, { held: 0, demand: 20 }], mine: 1, reserved: 0, giveable: 0 }, { held: 5, share: 10 }],
    ["over its share: gives back what is not in use",
      { limit: 20, nodes: [{ held: 20, demand: 20 }, { held: 0, demand: 20 }], mine: 0, reserved: 0, giveable: 4 }, { held: 16, share: 10 }],
    ["over its share and all in use: keeps it for now",
      { limit: 20, nodes: [{ held: 20, demand: 20 }, { held: 0, demand: 20 }], mine: 0, reserved: 0, giveable: 0 }, { held: 20, share: 10 }],
    ["nothing wanted: gives back every unit not in use",
      { limit: 10, nodes: [{ held: 10, demand: 2 }], mine: 0, reserved: 0, giveable: 8 }, { held: 2, share: 2 }],
    ["a gone node's tokens still count its starts: not free",
      { limit: 10, nodes: [{ held: 0, demand: 10 }], mine: 0, reserved: 4, giveable: 0 }, { held: 6, share: 10 }],
    ["the limit was lowered below what is held: nothing is taken",
      { limit: 5, nodes: [{ held: 2, demand: 5 }, { held: 6, demand: 5 }], mine: 0, reserved: 0, giveable: 0 }, { held: 2, share: 3 }],
    ["demands above the limit count as the limit",
      { limit: 10, nodes: [{ held: 0, demand: 1_000_000_000 }, { held: 0, demand: 1_000_000_000 }], mine: 0, reserved: 0, giveable: 0 }, { held: 5, share: 5 }]
  ]
  it.each(rows)("%s", (_, input, expected) => {
    expect(planUnits(input)).toEqual(expected)
  })

  it("every node planning from the same view never holds more than the limit together", () => {
    const nodes = [{ held: 3, demand: 50 }, { held: 9, demand: 4 }, { held: 0, demand: 50 }]
    const after = nodes.map((_, mine) => planUnits({ limit: 12, nodes, mine, reserved: 0, giveable: 0 }).held)
    expect(after.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(12)
  })

  describe("with headroom", () => {
    const rows: ReadonlyArray<readonly [string, Parameters<typeof planUnits>[0], ReturnType<typeof planUnits>]> = [
      ["alone wanting one: the whole limit",
        { limit: 10, nodes: [{ held: 0, demand: 1 }], mine: 0, reserved: 0, giveable: 0, headroom: true }, { held: 10, share: 10 }],
      ["wanting nothing: nothing (the gate can be forgotten)",
        { limit: 10, nodes: [{ held: 10, demand: 0 }], mine: 0, reserved: 0, giveable: 10, headroom: true }, { held: 0, share: 0 }],
      ["the surplus split among the nodes that want some, not those that want none",
        { limit: 10, nodes: [{ held: 0, demand: 1 }, { held: 0, demand: 0 }, { held: 0, demand: 3 }], mine: 2, reserved: 0, giveable: 0, headroom: true },
        { held: 6, share: 6 }],
      ["another node's demand rose: gives its headroom back down to its share",
        { limit: 10, nodes: [{ held: 10, demand: 2 }, { held: 0, demand: 10 }], mine: 0, reserved: 0, giveable: 8, headroom: true }, { held: 2, share: 2 }],
      ["a gone node's units are no surplus",
        { limit: 10, nodes: [{ held: 0, demand: 1 }], mine: 0, reserved: 4, giveable: 0, headroom: true }, { held: 6, share: 6 }]
    ]
    it.each(rows)("%s", (_, input, expected) => {
      expect(planUnits(input)).toEqual(expected)
    })

    it("every node planning from the same view never holds more than the limit together", () => {
      for (const nodes of [
        [{ held: 3, demand: 1 }, { held: 0, demand: 2 }, { held: 0, demand: 0 }],
        [{ held: 0, demand: 1 }, { held: 0, demand: 1 }, { held: 0, demand: 1 }],
        [{ held: 5, demand: 9 }, { held: 4, demand: 1 }, { held: 1, demand: 1 }]
      ]) {
        const after = nodes.map((_, mine) => planUnits({ limit: 10, nodes, mine, reserved: 0, giveable: nodes[mine]!.held, headroom: true }).held)
        expect(after.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(10)
      }
    })
  })
})
