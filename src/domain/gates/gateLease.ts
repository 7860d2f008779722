// How a gate's budget is shared between nodes (docs/tag-policies.md "How the limits hold across
// nodes"): each limit of a policy — maxConcurrent, and each throughput window's rate — is a number of
// units (permits, window tokens) that nodes lease from PostgreSQL in blocks and admit from in memory. A
// node's lease round reads every node's holding and demand, and this module decides what the node holds
// after it: its max-min fair share of the limit by demand, taken from what no one holds, or given back
// down to it (only units it is not using: a permit in flight or a token still counting a start stays).
// A node that is gone holds nothing (its permits come back at once) but its window tokens, which count
// its last starts until a window has passed since it was found gone. Permits nobody wants are shared
// out as headroom among the nodes that want some (`headroom`): a node then starts its next triggers
// at once instead of waiting for a round to lease one more, and gives the headroom back when another
// node's demand rises (its next round). Pure.

/**
 * Max-min fair shares of `limit` units between demands (in the order given; every node orders
 * nodes the same way, so all compute the same shares): the smallest demands are met first, the rest
 * is split evenly among the larger ones, and a remainder goes one unit each to the first of those.
 */
export const fairShares = (limit: number, demands: ReadonlyArray<number>): Array<number> => {
  const shares = demands.map(() => 0)
  let remaining = Math.max(0, Math.floor(limit))
  let active = demands.map((_, i) => i).filter((i) => demands[i]! > 0)
  while (active.length > 0 && remaining > 0) {
    const level = Math.floor(remaining / active.length)
    const met = active.filter((i) => demands[i]! - shares[i]! <= level)
    if (met.length > 0) {
      // every demand within an even split is met in full, and the rest is split again
      for (const i of met) {
        remaining -= demands[i]! - shares[i]!
        shares[i] = demands[i]!
      }
      active = active.filter((i) => !met.includes(i))
      continue
    }
    for (const i of active) shares[i]! += level
    remaining -= level * active.length
    for (const i of active.slice(0, remaining)) shares[i]! += 1
    break
  }
  return shares
}

/**
 * Splits the units of `limit` no share takes evenly among the nodes that want some (in the order
 * given, a remainder one unit each to the first): every node computes the same split.
 */
const addHeadroom = (limit: number, nodes: ReadonlyArray<UnitHolding>, shares: Array<number>): void => {
  const surplus = Math.max(0, Math.floor(limit) - shares.reduce((sum, n) => sum + n, 0))
  const wanting = nodes.map((_, i) => i).filter((i) => nodes[i]!.demand > 0)
  if (surplus === 0 || wanting.length === 0) return
  const each = Math.floor(surplus / wanting.length)
  wanting.forEach((i, k) => {
    shares[i]! += each + (k < surplus - each * wanting.length ? 1 : 0)
  })
}

/** One node's row of one limit as a lease round reads it. */
export interface UnitHolding {
  /** Units the node holds. */
  readonly held: number
  /** Units it wants: those in use and those its waiting triggers need (at most the limit). */
  readonly demand: number
}

/**
 * What this node holds of one limit after its round, and its share: its fair share (by the demands
 * of the live nodes, `nodes[mine]` being its own), taken from the units nobody holds (`limit` minus
 * every live node's holding minus `reserved`, what gone nodes still hold), or given back down to
 * it, at most `giveable` (its units not in use). A node holding more than its share (in use) starts
 * nothing beyond its share; one whose share is more than it could take waits for the others to
 * give back rather than take what they still hold.
 */
export const planUnits = (input: {
  readonly limit: number
  readonly nodes: ReadonlyArray<UnitHolding>
  readonly mine: number
  readonly reserved: number
  readonly giveable: number
  /** What no node's demand asks for is split evenly among the nodes that want some. */
  readonly headroom?: boolean
}): { readonly held: number; readonly share: number } => {
  const own = input.nodes[input.mine]!
  const shares = fairShares(input.limit, input.nodes.map((node) => Math.min(node.demand, input.limit)))
  if (input.headroom === true) addHeadroom(input.limit - input.reserved, input.nodes, shares)
  const share = shares[input.mine]!
  const free = input.limit - input.reserved - input.nodes.reduce((sum, node) => sum + node.held, 0)
  if (share > own.held) return { held: own.held + Math.max(0, Math.min(share - own.held, free)), share }
  return { held: own.held - Math.max(0, Math.min(own.held - share, input.giveable)), share }
}
