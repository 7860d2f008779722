// An origin's circuit as one node sees it (domain/gates/circuitGate.ts): a state older than the one it
// knows is not applied (a lease round's read that started before a change never undoes it); times
// on this node's clock; closed admits, unless this node's failures being settled may open it; open
// admits nothing; probing admits only the node holding the probe, once (its start is the probe).
import { describe, expect, it } from "vitest"
import { CLOSED, type CircuitState } from "../../src/domain/gates/circuitBreaker.ts"
import { CircuitGate } from "../../src/domain/gates/circuitGate.ts"

const NOW = 1_750_000_000_000
const OFFSET = 250 // the database's clock runs 250 ms ahead of this node's
const open = (untilDbMs: number, probe: CircuitState["probe"] = null): CircuitState => ({
  ...CLOSED, openedAtMs: untilDbMs - 10_000, reason: "HTTP 500", openUntilMs: untilDbMs, cooldownMs: 10_000, probe
})

describe("CircuitGate", () => {
  it("applies newer states only, on this node's clock", () => {
    const gate = new CircuitGate({ failures: 3, cooldownSeconds: 10 })
    expect(gate.apply(open(NOW + OFFSET + 5_000), 4, OFFSET, "a")).toBe(true)
    expect(gate.openUntilMs()).toBe(NOW + 5_000)
    expect(gate.phase(NOW + 4_999)).toBe("open")
    expect(gate.phase(NOW + 5_000)).toBe("probing")
    // a read taken before the opening (version 3) does not close it again
    expect(gate.apply(CLOSED, 3, OFFSET, "a")).toBe(false)
    expect(gate.admits(NOW)).toBe(false)
  })

  it("closed: admits until this node's failures being settled may open it", () => {
    const gate = new CircuitGate({ failures: 3, cooldownSeconds: 10 })
    gate.apply({ ...CLOSED, failures: 1, lastFailureAtMs: NOW }, 1, 0, "a")
    expect(gate.admits(NOW)).toBe(true)
    gate.pendingFailures = 1
    expect(gate.admits(NOW)).toBe(true)
    gate.pendingFailures = 2
    expect(gate.admits(NOW)).toBe(false)
    gate.pendingFailures = 0
    gate.apply({ ...CLOSED }, 2, 0, "a")
    expect(gate.admits(NOW)).toBe(true)
  })

  it("probing: only the probe's holder admits, one start, which is the probe", () => {
    const gate = new CircuitGate({ failures: 3, cooldownSeconds: 10 })
    gate.apply(open(NOW - 1), 1, 0, "a")
    expect(gate.wantsClaim(NOW)).toBe(true)
    expect(gate.admits(NOW)).toBe(false)
    gate.probe = "claiming"
    expect(gate.wantsClaim(NOW)).toBe(false)
    gate.apply(open(NOW - 1, { node: "a", sinceMs: NOW }), 2, 0, "a")
    expect([gate.probe, gate.probeSinceMs]).toEqual(["mine", NOW])
    expect(gate.admits(NOW)).toBe(true)
    expect(gate.take(NOW)).toBe(true)
    expect(gate.admits(NOW)).toBe(false)
    expect(gate.take(NOW)).toBe(false)
    // another node holds it: none here
    const other = new CircuitGate({ failures: 3, cooldownSeconds: 10 })
    other.apply(open(NOW - 1, { node: "b", sinceMs: NOW }), 2, 0, "a")
    expect([other.probe, other.admits(NOW)]).toEqual(["none", false])
  })
})
