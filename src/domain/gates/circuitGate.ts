// An origin's circuit breaker as one node sees it (docs/protecting-targets.md "Circuit breaker"):
// the shared state as last heard (store/targetCircuits.ts; a newer version only, so a read that
// started before a change never undoes it), the end of its cooldown on this node's clock, and this
// node's part in the probe — none, claiming it, holding it (`mine`: one start may go), or having
// sent it (its outcome settles the circuit). It admits while closed (but not while this node's
// failures that may open it are being settled), nothing while open, and while probing only the one
// start of the node holding the probe. Pure: the caller passes the time.
import { circuitPhase, CLOSED, type CircuitPhase, type CircuitSettings, type CircuitState } from "./circuitBreaker.ts"

export type ProbePart = "none" | "claiming" | "mine" | "sent"

export class CircuitGate {
  settings: CircuitSettings
  /** The shared state as last heard (database clock), and its version (0: never written). */
  state: CircuitState = CLOSED
  version = -1
  /** The database's clock minus this node's, when the state was heard. */
  #offsetMs = 0
  probe: ProbePart = "none"
  /** When this node got the probe (its clock), to give it back if it has nothing to send. */
  probeSinceMs = 0
  /** A claim of the probe is not tried again before this time (after one was refused). */
  claimAfterMs = -Infinity
  /** The last answer this node saw (database clock): failures counted before it are reset. */
  lastAnswerAtMs = -Infinity
  /** This node's failures not settled yet: while they may open the circuit, nothing more starts. */
  pendingFailures = 0

  constructor(settings: CircuitSettings) {
    this.settings = settings
  }

  /** The shared state (database clock) heard with its version: applied when newer than what this node knows. */
  apply(state: CircuitState, version: number, offsetMs: number, node: string): boolean {
    if (version < this.version) return false
    this.state = state
    this.version = version
    this.#offsetMs = offsetMs
    const holder = state.probe?.node
    if (holder === node) {
      if (this.probe === "none" || this.probe === "claiming") {
        this.probe = "mine"
        this.probeSinceMs = state.probe!.sinceMs - offsetMs
      }
    } else if (this.probe !== "claiming") {
      this.probe = "none"
    }
    return true
  }

  phase(nowMs: number): CircuitPhase {
    return circuitPhase(this.state, nowMs + this.#offsetMs)
  }

  /** The end of the cooldown on this node's clock (null: closed). */
  openUntilMs(): number | null {
    return this.state.openUntilMs === null ? null : this.state.openUntilMs - this.#offsetMs
  }

  /**
   * Whether a start may go now: closed (and not about to open by this node's failures being settled:
   * a failed trigger's retry due at once must not slip out before the opening is known), or probing
   * with the probe this node's to send.
   */
  admits(nowMs: number): boolean {
    const phase = this.phase(nowMs)
    if (phase === "closed") return this.state.failures + this.pendingFailures < this.settings.failures
    return phase === "probing" && this.probe === "mine"
  }

  /** One start admitted now: whether it is the probe. */
  take(nowMs: number): boolean {
    if (this.phase(nowMs) !== "probing" || this.probe !== "mine") return false
    this.probe = "sent"
    return true
  }

  /**
   * Nothing of this node's is on its way to the shared state: no failure being settled, no probe
   * claimed, held or sent. Only then may the node forget its gate: a gate made anew knows only what
   * its first lease round reads, which may not show those failures yet, and counts none pending —
   * a failed trigger's retry due at once would start while they open the circuit.
   */
  quiet(): boolean {
    return this.pendingFailures === 0 && this.probe === "none"
  }

  /**
   * Probing, this node without the probe, and no claim refused lately: worth a claim when triggers
   * wait (the probe may be nobody's, or its holder gone).
   */
  wantsClaim(nowMs: number): boolean {
    return this.phase(nowMs) === "probing" && this.probe === "none" && nowMs >= this.claimAfterMs
  }
}
