// What one lease round of this node decides for its gates (docs/tag-policies.md "How the limits hold
// across nodes"), from what the round read (store/gateLeases.ts): each gate's policy, hold and circuit
// applied to its book, this node's share of every limit (domain/gates/gateLease.ts planUnits, by the
// demands of the live nodes), the rows of gone nodes to reclaim and those to purge, and this node's
// rows to write. Units given back leave the book at once; units taken join it when the round has
// committed (`commit`), unless the gate's row was not written (its policy changed since the read).
// The lease is then valid until the round's start (this node's clock) plus the lease time: a node
// that cannot renew stops admitting before any other node may take its share.
import { CircuitGate } from "../domain/gates/circuitGate.ts"
import { isOriginGate, policyLimits } from "../domain/gates/gate.ts"
import { CONCURRENCY, GateBook, tokenMarginMs } from "../domain/gates/gateBook.ts"
import { planUnits, type UnitHolding } from "../domain/gates/gateLease.ts"
import type { GateKey, GateRoundRead, LeaseRow, OwnLease, RoundRead, RoundWrites } from "../store/gateLeases.ts"
import { gateKey, type NodeGate } from "./nodeGates.ts"

/** Demand of a node whose gate has triggers waiting in PostgreSQL: as much as the limit allows. */
const BACKLOG_DEMAND = 1_000_000_000
/** A gate that admitted about once in this long still counts as wanting a permit. */
const RECENT_WINDOW_MS = 2_000
/** Names of the live nodes a first round has not seen a row of yet (sorted after every node's). */
const UNSEEN = "\uffffunseen"

/** The window tokens of a gone row still count its last starts (until a window and the margin after it was found gone). */
const goneTokens = (row: LeaseRow, label: string, windowMs: number, dbNowMs: number): number => {
  const goneAtMs = row.goneAtMs ?? dbNowMs
  return dbNowMs < goneAtMs + windowMs + tokenMarginMs(windowMs) ? row.tokens[label] ?? 0 : 0
}

/** A gone row that counts nothing any more. */
const spent = (row: LeaseRow, windows: ReadonlyArray<{ readonly label: string; readonly windowMs: number }>, dbNowMs: number): boolean =>
  windows.every((window) => goneTokens(row, window.label, window.windowMs, dbNowMs) === 0)

interface Decided {
  readonly own: OwnLease | null
  readonly reclaim: ReadonlyArray<string>
  readonly purge: ReadonlyArray<string>
  /** Gives the book what the round leased it (once the round has committed). */
  readonly grant?: () => void
  /** It takes units nobody held: its commit must be durable. */
  readonly takes?: boolean
}

/** One gate's part of the round; mutates its book. */
const decideGate = <I>(
  node: string,
  gate: NodeGate<I>,
  read: GateRoundRead,
  dbNowMs: number,
  toLocalMs: (dbMs: number) => number,
  leaseUntilMs: number,
  localNowMs: number,
  liveNodes: number
): Decided => {
  if (read.policy === null) {
    // no policy (any more): nothing holds its triggers back; its leases are forgotten
    gate.open = true
    gate.book = null
    gate.readyAtMs ??= localNowMs
    gate.backlog = read.backlog
    return {
      own: null,
      reclaim: read.leases.filter((row) => row.reclaimable).map((row) => row.node),
      purge: read.leases.filter((row) => row.goneAtMs !== null).map((row) => row.node)
    }
  }
  const limits = policyLimits(read.policy)
  gate.open = false
  gate.readyAtMs ??= localNowMs
  if (gate.book === null) gate.book = new GateBook(limits)
  else gate.book.setLimits(limits)
  const book = gate.book
  gate.policySeenMs = read.policy.updatedAtMs
  gate.hold = read.hold
  gate.backlog = read.backlog
  if (read.hold !== null) book.heldUntilMs = Math.max(book.heldUntilMs, toLocalMs(read.hold.heldUntilMs))
  const breaker = read.policy.circuitBreaker
  if (breaker === null) book.circuit = null
  else {
    book.circuit ??= new CircuitGate(breaker)
    book.circuit.settings = breaker
    if (read.circuit !== null) book.circuit.apply(read.circuit.state, read.circuit.version, dbNowMs - toLocalMs(dbNowMs), node)
  }

  const reclaim = read.leases.filter((row) => row.reclaimable).map((row) => row.node)
  const gone = read.leases.filter((row) => row.goneAtMs !== null || row.reclaimable)
  const purge = gone.filter((row) => row.goneAtMs !== null && spent(row, limits.windows, dbNowMs)).map((row) => row.node)
  const mineRow = read.leases.find((row) => row.node === node && row.goneAtMs === null)
  // this node wrote its row before and it is gone: another node found it gone (cut off from the
  // database past its lease): what it held is no longer its own
  if (mineRow === undefined && gate.rowWritten) book.lease({ permits: 0, tokens: {} }, book.leaseUntilMs, { permits: 0, tokens: {} })

  if (!book.leased) {
    // an origin's gate without limits still reports its requests in flight (GET /targets)
    if (isOriginGate(gate.ref.tag) && book.inUse > 0) {
      gate.rowWritten = true
      const own: OwnLease = {
        projectId: gate.ref.projectId, tag: gate.ref.tag, permits: 0, tokens: {}, demand: {}, inFlight: book.inUse,
        policySeenMs: read.policy.updatedAtMs
      }
      return { own, reclaim, purge }
    }
    gate.rowWritten = false
    return { own: null, reclaim, purge }
  }
  // a gate that admitted lately wants at least one more (it keeps its headroom while its traffic lasts)
  const recent = gate.rateAt(localNowMs) * RECENT_WINDOW_MS >= 1 ? 1 : 0
  const wanted = Math.max(recent, gate.waiting) + (gate.backlog > 0 ? BACKLOG_DEMAND : 0)
  const demand = book.demand(wanted, localNowMs)
  const holding = book.holding()
  const giveable = book.giveable(localNowMs)
  const live = read.leases.filter((row) => row.goneAtMs === null && !row.reclaimable && row.node !== node)
  // this node's first round of the gate: a burst fires on every node at once, and the other live
  // nodes may want the gate too before their rows say so; until then each counts as wanting it all
  // (next round, the rows tell: a node alone then takes the rest)
  const unseen = mineRow === undefined && !gate.rowWritten ? Math.max(0, liveNodes - 1 - live.length) : 0
  const nodes = [...[...live.map((row) => row.node), node].sort(), ...Array.from({ length: unseen }, (_, i) => `${UNSEEN}${i}`)]
  const mine = nodes.indexOf(node)
  const unitsOf = (held: (row: LeaseRow) => number, own: number, key: string): Array<UnitHolding> =>
    nodes.map((name) => {
      if (name === node) return { held: own, demand: demand[key] ?? 0 }
      const row = live.find((r) => r.node === name)
      return row === undefined ? { held: 0, demand: BACKLOG_DEMAND } : { held: held(row), demand: row.demand[key] ?? 0 }
    })
  const next: { permits: number; tokens: Record<string, number> } = { permits: 0, tokens: {} }
  const share: { permits: number; tokens: Record<string, number> } = { permits: 0, tokens: {} }
  if (limits.maxConcurrent !== null) {
    const planned = planUnits({
      limit: limits.maxConcurrent,
      nodes: unitsOf((row) => row.permits, holding.permits, CONCURRENCY),
      mine,
      reserved: 0,
      giveable: giveable.permits,
      headroom: true
    })
    next.permits = planned.held
    share.permits = planned.share
  }
  for (const window of limits.windows) {
    const planned = planUnits({
      limit: window.limit,
      nodes: unitsOf((row) => row.tokens[window.label] ?? 0, holding.tokens[window.label] ?? 0, window.label),
      mine,
      reserved: gone.reduce((sum, row) => sum + goneTokens(row, window.label, window.windowMs, dbNowMs), 0),
      giveable: giveable.tokens[window.label] ?? 0
    })
    next.tokens[window.label] = planned.held
    share.tokens[window.label] = planned.share
  }
  // a unit given back, or beyond the share, is this node's no more from now on; one taken only once
  // the round has committed
  const lower = { permits: Math.min(next.permits, holding.permits), tokens: {} as Record<string, number> }
  for (const [label, n] of Object.entries(next.tokens)) lower.tokens[label] = Math.min(n, holding.tokens[label] ?? 0)
  const lowerShare = { permits: Math.min(share.permits, lower.permits, book.permitShare), tokens: {} as Record<string, number> }
  for (const [label, n] of Object.entries(share.tokens)) lowerShare.tokens[label] = Math.min(n, lower.tokens[label] ?? 0)
  book.lease(lower, book.leaseUntilMs, lowerShare)
  const grant = () => book.lease(next, leaseUntilMs, share)
  const takes = next.permits > holding.permits || Object.entries(next.tokens).some(([label, n]) => n > (holding.tokens[label] ?? 0))
  const holdsNothing = next.permits === 0 && Object.values(next.tokens).every((n) => n === 0)
  const wantsNothing = Object.values(demand).every((n) => n === 0)
  if (holdsNothing && wantsNothing && book.inUse === 0) {
    gate.rowWritten = false
    return { own: null, reclaim, purge, grant, takes }
  }
  gate.rowWritten = true
  const own: OwnLease = {
    projectId: gate.ref.projectId, tag: gate.ref.tag, permits: next.permits, tokens: next.tokens, demand, inFlight: book.inUse,
    policySeenMs: read.policy.updatedAtMs
  }
  return { own, reclaim, purge, grant, takes }
}

/**
 * Applies a round's read to the gates (by key) and says what to write: `roundStartMs` is this node's
 * clock when the round began (its lease runs from there), `readAtMs` when the read came back.
 */
export const decideRound = <I>(input: {
  readonly node: string
  readonly read: RoundRead
  readonly gates: ReadonlyMap<string, NodeGate<I>>
  readonly roundStartMs: number
  readonly readAtMs: number
  readonly ttlMs: number
}): { readonly writes: RoundWrites; readonly dbOffsetMs: number; readonly commit: (stale: ReadonlyArray<GateKey>) => void } => {
  const dbOffsetMs = input.read.nowMs - (input.roundStartMs + input.readAtMs) / 2
  const toLocalMs = (dbMs: number) => dbMs - dbOffsetMs
  const keep: Array<OwnLease> = []
  const drop: Array<GateKey> = []
  const reclaim: Array<GateKey & { node: string }> = []
  const purge: Array<GateKey & { node: string }> = []
  const grants = new Map<string, () => void>()
  let durable = false
  for (const read of input.read.gates) {
    const gate = input.gates.get(gateKey(read))
    if (gate === undefined) continue
    const decided = decideGate(
      input.node, gate, read, input.read.nowMs, toLocalMs, input.roundStartMs + input.ttlMs, input.readAtMs, input.read.liveNodes
    )
    if (decided.own === null) drop.push({ projectId: read.projectId, tag: read.tag })
    else keep.push(decided.own)
    for (const node of decided.reclaim) reclaim.push({ projectId: read.projectId, tag: read.tag, node })
    for (const node of decided.purge) purge.push({ projectId: read.projectId, tag: read.tag, node })
    if (decided.grant !== undefined) grants.set(gateKey(read), decided.grant)
    durable ||= decided.takes === true || decided.reclaim.length > 0
  }
  const commit = (stale: ReadonlyArray<GateKey>) => {
    for (const gate of stale) grants.delete(gateKey(gate))
    grants.forEach((grant) => grant())
  }
  return { writes: { keep, drop, reclaim, purge, durable }, dbOffsetMs, commit }
}

