// What one lease round of a node decides (gates/leaseRound.ts), from a read without PostgreSQL: a
// node alone that wants a permit of an origin's gate takes the whole limit as headroom (its next
// triggers start with no round between); a gate that admitted lately keeps it with nothing waiting;
// once its traffic has stopped for a while it gives everything back and its row goes.
import { describe, expect, it } from "vitest"
import type { DeliveryRow } from "../../src/domain/trigger.ts"
import { decideRound } from "../../src/gates/leaseRound.ts"
import { NodeGates } from "../../src/gates/nodeGates.ts"
import type { RoundRead } from "../../src/store/gateLeases.ts"

const T0 = 1_750_000_000_000
const PROJECT = "0190b1c2-0000-7000-8000-000000000002"
const ORIGIN = "http://127.0.0.1:9"

const row = (id: string): DeliveryRow => ({
  id, shard: 0, generatorId: null, projectId: PROJECT, url: `${ORIGIN}/x`, method: "POST", headers: [], body: null,
  contentType: null, tags: [], attempt: 1, retry: null, projectRetry: null, triggeredBy: null, signingSecrets: [], gateTags: [ORIGIN],
  scheduledAtMs: null, fired: null, traceparent: null, tracestate: null
})

const read = (nowMs: number, permits: number | null): RoundRead => ({
  nowMs, serverUpMs: 1e9, liveNodes: 1,
  gates: [{
    projectId: PROJECT, tag: ORIGIN,
    policy: { maxConcurrent: 10, throughput: null, updatedAtMs: T0 - 1_000, circuitBreaker: null },
    hold: null, circuit: null, backlog: 0,
    leases: permits === null ? [] : [{ node: "n1", permits, tokens: {}, demand: {}, inFlight: 0, goneAtMs: null, reclaimable: false }]
  }]
})

const round = (gates: NodeGates<string>, nowMs: number, permits: number | null) => {
  const decided = decideRound({ node: "n1", read: read(nowMs, permits), gates: gates.gates, roundStartMs: nowMs, readAtMs: nowMs, ttlMs: 2_000 })
  decided.commit([])
  return decided.writes
}

describe("decideRound: headroom", () => {
  it("alone, one trigger waiting: the whole limit; kept while the gate admitted lately; given back once its traffic stopped", () => {
    const gates = new NodeGates<string>()
    gates.offer([{ item: "a", row: row("a") }], false, T0)
    const gate = gates.gate({ projectId: PROJECT, tag: ORIGIN })

    const first = round(gates, T0, null)
    expect(first.keep.map((own) => own.permits)).toEqual([10])
    expect(gate.book!.holding().permits).toBe(10)

    expect(gates.admit(T0).map((waiter) => waiter.item)).toEqual(["a"])
    gates.finished("a", T0 + 10)
    // nothing waits, nothing in flight, but it admitted 0.1 s ago: it keeps the headroom
    const renewal = round(gates, T0 + 100, 10)
    expect(renewal.keep.map((own) => own.permits)).toEqual([10])
    expect(gate.idle(T0 + 100)).toBe(false)

    // 5 s without a start: all given back, its row dropped, the gate can be forgotten
    const quiet = round(gates, T0 + 5_000, 10)
    expect(quiet.keep).toEqual([])
    expect(quiet.drop.length).toBe(1)
    expect(gate.idle(T0 + 5_000)).toBe(true)
  })

  it("the first round marks the gate ready (what waits for it is released for its age from then on); later rounds leave that time", () => {
    const gates = new NodeGates<string>()
    gates.offer([{ item: "a", row: row("a") }], false, T0)
    const gate = gates.gate({ projectId: PROJECT, tag: ORIGIN })
    expect(gate.readyAtMs).toBeNull()
    round(gates, T0 + 700, null)
    expect(gate.readyAtMs).toBe(T0 + 700)
    round(gates, T0 + 900, 10)
    expect(gate.readyAtMs).toBe(T0 + 700)
  })
})
