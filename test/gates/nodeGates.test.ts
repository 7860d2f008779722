// A node's gates in memory (gates/nodeGates.ts): triggers start in arrival order as far as every gate
// they carry admits them, the gates taking turns (one start each a turn), at most maxStarts out at once; one blocked by a full gate does not hold back those behind it without that
// gate; a ticket gives its permit back with the outcome; what waits at a paused or held gate is handed
// out for release at once, what waits longer than RELEASE_AFTER_MS too (counted from its gates' first lease round; not what was taken from
// PostgreSQL, which reads `queued` already, nor what waits only for a sender); a stopping node releases everything; a gate is forgotten
// only when nothing of it is in flight, waiting, held, leased, or on its way to its circuit's shared
// state (a failure being settled, a probe).
import { describe, expect, it } from "vitest"
import { CLOSED } from "../../src/domain/gates/circuitBreaker.ts"
import { CircuitGate } from "../../src/domain/gates/circuitGate.ts"
import { policyLimits } from "../../src/domain/gates/gate.ts"
import { GateBook } from "../../src/domain/gates/gateBook.ts"
import type { DeliveryRow } from "../../src/domain/trigger.ts"
import { NodeGates, RELEASE_AFTER_MS } from "../../src/gates/nodeGates.ts"

const T0 = 1_750_000_000_000
const PROJECT = "0190b1c2-0000-7000-8000-000000000001"

const row = (id: string, gateTags: ReadonlyArray<string>): DeliveryRow => ({
  id, shard: 0, generatorId: null, projectId: PROJECT, url: "http://127.0.0.1:9/x", method: "POST", headers: [], body: null,
  contentType: null, tags: gateTags, attempt: 1, retry: null, projectRetry: null, triggeredBy: null, signingSecrets: [], gateTags,
  scheduledAtMs: null, fired: null, traceparent: null, tracestate: null
})

/** Gates whose books hold the whole limit of these policies until far ahead. */
const gatesWith = (policies: Record<string, { maxConcurrent?: number; throughput?: Record<string, number> }>) => {
  const gates = new NodeGates<string>()
  for (const [tag, policy] of Object.entries(policies)) {
    const limits = policyLimits({ maxConcurrent: policy.maxConcurrent ?? null, throughput: policy.throughput ?? null })
    const book = new GateBook(limits)
    book.lease({ permits: limits.maxConcurrent ?? 0, tokens: Object.fromEntries(limits.windows.map((w) => [w.label, w.limit])) }, Infinity)
    const gate = gates.gate({ projectId: PROJECT, tag })
    gate.book = book
    gate.readyAtMs = -Infinity
  }
  return gates
}

const offer = (gates: NodeGates<string>, rows: ReadonlyArray<DeliveryRow>, nowMs = T0, taken = false) =>
  gates.offer(rows.map((r) => ({ item: r.id, row: r })), taken, nowMs)

const admitted = (gates: NodeGates<string>, nowMs = T0) => gates.admit(nowMs).map((waiter) => waiter.item)

describe("admission", () => {
  it("in arrival order up to the limit; a finished attempt lets the next one start", () => {
    const gates = gatesWith({ a: { maxConcurrent: 2 } })
    offer(gates, ["1", "2", "3"].map((id) => row(id, ["a"])))
    expect(admitted(gates)).toEqual(["1", "2"])
    expect(admitted(gates)).toEqual([])
    gates.finished("1", T0 + 10)
    expect(admitted(gates)).toEqual(["3"])
    expect(gates.waitingTotal).toBe(0)
  })

  it("a trigger blocked by a full gate does not hold back those behind it without that gate", () => {
    const gates = gatesWith({ full: { maxConcurrent: 1 }, open: { maxConcurrent: 5 } })
    offer(gates, [row("f", ["full"])])
    expect(admitted(gates)).toEqual(["f"])
    offer(gates, [row("both", ["full", "open"]), row("o1", ["open"]), row("o2", ["open"])])
    expect(admitted(gates)).toEqual(["o1", "o2"])
    gates.finished("f", T0)
    expect(admitted(gates)).toEqual(["both"])
  })

  it("the gates take turns, one start each: many origins' starts leave mixed, not one origin's budget first", () => {
    const gates = gatesWith({ "http://a": { maxConcurrent: 10 }, "http://b": { maxConcurrent: 10 }, "http://c": { maxConcurrent: 2 } })
    offer(gates, ["a1", "a2", "a3"].map((id) => row(id, ["http://a"])))
    offer(gates, ["b1", "b2", "b3"].map((id) => row(id, ["http://b"])))
    offer(gates, ["c1", "c2", "c3"].map((id) => row(id, ["http://c"])))
    expect(admitted(gates)).toEqual(["a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3"])
    gates.finished("c1", T0)
    expect(admitted(gates)).toEqual(["c3"])
  })

  it("at most maxStarts admitted and not finished (the node's senders); the next free one goes to a gate that did not start last", () => {
    const gates = gatesWith({ "http://a": { maxConcurrent: 10 }, "http://b": { maxConcurrent: 10 } })
    gates.maxStarts = 3
    offer(gates, ["a1", "a2", "a3"].map((id) => row(id, ["http://a"])))
    offer(gates, ["b1", "b2", "b3"].map((id) => row(id, ["http://b"])))
    expect(admitted(gates)).toEqual(["a1", "b1", "a2"])
    expect(admitted(gates)).toEqual([])
    gates.finished("a1", T0 + 10)
    expect(admitted(gates)).toEqual(["b2"])
    gates.finished("b1", T0 + 10)
    expect(admitted(gates)).toEqual(["a3"])
  })

  it("a tag whose policy was deleted holds nothing back; a gate not read yet holds everything", () => {
    const gates = gatesWith({})
    gates.gate({ projectId: PROJECT, tag: "gone" }).open = true
    offer(gates, [row("g", ["gone"]), row("u", ["unread"])])
    expect(admitted(gates)).toEqual(["g"])
  })
})

describe("what is released to wait in PostgreSQL", () => {
  it("everything waiting at a paused or held gate, at once, taken or not", () => {
    const gates = gatesWith({ p: { throughput: { "1s": 0 } }, h: { maxConcurrent: 5 } })
    gates.gate({ projectId: PROJECT, tag: "h" }).book!.heldUntilMs = T0 + 2_000
    offer(gates, [row("p1", ["p"]), row("h1", ["h"])])
    offer(gates, [row("h2", ["h"])], T0, true)
    expect(admitted(gates)).toEqual([])
    expect(gates.releasable(T0).map((waiter) => waiter.item).sort()).toEqual(["h1", "h2", "p1"])
    expect(gates.waitingTotal).toBe(0)
  })

  it("what waited RELEASE_AFTER_MS, but not what was taken from PostgreSQL", () => {
    const gates = gatesWith({ a: { maxConcurrent: 1 } })
    offer(gates, [row("1", ["a"]), row("2", ["a"])])
    offer(gates, [row("t", ["a"])], T0, true)
    expect(admitted(gates)).toEqual(["1"])
    expect(gates.releasable(T0 + RELEASE_AFTER_MS - 1)).toEqual([])
    expect(gates.releasable(T0 + RELEASE_AFTER_MS).map((waiter) => waiter.item)).toEqual(["2"])
    expect(gates.waitingTotal).toBe(1)
  })

  it("not for its age while a gate of it has had no lease round; then RELEASE_AFTER_MS after that round; a stopping node releases it", () => {
    const gates = gatesWith({ a: { maxConcurrent: 1 } })
    offer(gates, [row("0", ["a"]), row("1", ["new"]), row("2", ["a", "new"])])
    expect(admitted(gates)).toEqual(["0"])
    // "new" has no book yet: it admits nothing, and what waits for it waits for its budget, here
    expect(gates.releasable(T0 + 5 * RELEASE_AFTER_MS)).toEqual([])
    expect(gates.nextWakeMs(T0 + 5 * RELEASE_AFTER_MS)).toBeNull()
    // its first round, late: the age counts from it
    const gate = gates.gate({ projectId: PROJECT, tag: "new" })
    gate.book = new GateBook(policyLimits({ maxConcurrent: 0, throughput: null }))
    gate.readyAtMs = T0 + 5 * RELEASE_AFTER_MS
    expect(gates.nextWakeMs(T0 + 5 * RELEASE_AFTER_MS)).toBe(T0 + 6 * RELEASE_AFTER_MS)
    expect(gates.releasable(T0 + 6 * RELEASE_AFTER_MS - 1)).toEqual([])
    expect(gates.releasable(T0 + 6 * RELEASE_AFTER_MS).map((waiter) => waiter.item).sort()).toEqual(["1", "2"])
    // a stopping node gives back what waits for a gate with no round yet
    const stopping = gatesWith({})
    offer(stopping, [row("3", ["new"])])
    stopping.closed = true
    expect(stopping.releasable(T0).map((waiter) => waiter.item)).toEqual(["3"])
  })

  it("not for its age while the node's senders are all taken and its gates admit it (it waits for a sender); else as before", () => {
    const gates = gatesWith({ open: { maxConcurrent: 10 }, full: { maxConcurrent: 1 } })
    gates.maxStarts = 2
    offer(gates, [row("1", ["open"]), row("2", ["full"]), row("3", ["open"]), row("4", ["full"])])
    expect(admitted(gates)).toEqual(["1", "2"])
    // "3": its gate admits, the senders are full; "4": its gate is full
    expect(gates.releasable(T0 + RELEASE_AFTER_MS).map((waiter) => waiter.item)).toEqual(["4"])
    gates.finished("2", T0 + RELEASE_AFTER_MS)
    expect(gates.releasable(T0 + RELEASE_AFTER_MS).map((waiter) => waiter.item)).toEqual(["3"])
  })

  it("a stopping node admits nothing and releases everything; what a release did not take waits again", () => {
    const gates = gatesWith({ a: { maxConcurrent: 5 } })
    gates.closed = true
    offer(gates, [row("1", ["a"])])
    offer(gates, [row("t", ["a"])], T0, true)
    expect(admitted(gates)).toEqual([])
    const out = gates.releasable(T0)
    expect(out.map((waiter) => waiter.item)).toEqual(["1", "t"])
    gates.closed = false
    gates.requeue(out, T0 + 5)
    // each waits again as it was: the taken one still exempt from the time rule, the other not
    expect(gates.releasable(T0 + 5 + RELEASE_AFTER_MS).map((waiter) => waiter.item)).toEqual(["1"])
    expect(admitted(gates, T0 + 6)).toEqual(["t"])
  })
})

describe("forgetting a gate", () => {
  it("not while its circuit has a failure being settled: a gate made anew would let the failed trigger's retry start", () => {
    const settings = { failures: 3, cooldownSeconds: 2 }
    const gates = gatesWith({ origin: {} })
    const gate = gates.gate({ projectId: PROJECT, tag: "origin" })
    const circuit = new CircuitGate(settings)
    gate.book!.circuit = circuit
    circuit.apply({ ...CLOSED, failures: 2, lastFailureAtMs: T0 }, 2, 0, "a")
    offer(gates, [row("t", ["origin"])])
    expect(admitted(gates)).toEqual(["t"])
    expect(gate.idle(T0)).toBe(false)
    // its third failure comes back: counted here (gates/circuits.ts `finished`) until settled in PostgreSQL
    gates.finished("t", T0 + 10)
    circuit.pendingFailures++
    expect(circuit.admits(T0 + 10)).toBe(false)
    // a lease round now must not forget the gate: made anew for the retry, it would know only what its
    // round reads, which may be from before the settle, and nothing pending: it would admit
    expect(gate.idle(T0 + 10)).toBe(false)
    const anew = new CircuitGate(settings)
    anew.apply({ ...CLOSED, failures: 2, lastFailureAtMs: T0 }, 2, 0, "a")
    expect(anew.admits(T0 + 10)).toBe(true)
    // settled (it opened the circuit): now the gate may go, a round reads the opening
    circuit.pendingFailures--
    circuit.apply({ ...CLOSED, openedAtMs: T0 + 20, reason: "HTTP 500", openUntilMs: T0 + 2_020, cooldownMs: 2_000 }, 3, 0, "a")
    expect(gate.idle(T0 + 30)).toBe(true)
  })

  it("not while its node claims, holds or sent the probe", () => {
    const gates = gatesWith({ origin: {} })
    const gate = gates.gate({ projectId: PROJECT, tag: "origin" })
    const circuit = new CircuitGate({ failures: 3, cooldownSeconds: 2 })
    gate.book!.circuit = circuit
    for (const probe of ["claiming", "mine", "sent"] as const) {
      circuit.probe = probe
      expect(gate.idle(T0)).toBe(false)
    }
    circuit.probe = "none"
    expect(gate.idle(T0)).toBe(true)
  })
})
