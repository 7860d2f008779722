// The circuit breaker of an origin (docs/protecting-targets.md "Circuit breaker"), as a pure state
// machine over the state every node shares (store/targetCircuits.ts keeps one row per project and
// origin and applies these functions under its lock, with the database's clock):
// - closed: `failures` consecutive attempts ending in a network error, a timeout or a 5xx other
//   than 503 open it; any other answer resets the count;
// - open: the origin is held for the cooldown (policy's cooldownSeconds, doubled each time it opens
//   again without a success in between, at most an hour); outcomes of attempts that left before it
//   opened change nothing;
// - probing (the cooldown has ended): a single attempt goes first — the probe, claimed by one node;
//   its answer closes the circuit (count reset), its failure opens it again, and an attempt that
//   never reached the origin (refused before sending) gives the probe back. A probe whose node is
//   gone may be claimed by another node. Times in ms.

export type CircuitPhase = "closed" | "open" | "probing"

export interface CircuitSettings {
  readonly failures: number
  readonly cooldownSeconds: number
}

export interface CircuitState {
  /** Consecutive failures counted while closed. */
  readonly failures: number
  /** When the last counted failure ended (null: none since the last reset). */
  readonly lastFailureAtMs: number | null
  /** When it last opened (kept once closed, for the record), and why. */
  readonly openedAtMs: number | null
  readonly reason: string | null
  /** The end of the current cooldown; null while closed. */
  readonly openUntilMs: number | null
  /** The cooldown of the current opening (0 while closed). */
  readonly cooldownMs: number
  /** The node sending the probe, since when. */
  readonly probe: { readonly node: string; readonly sinceMs: number } | null
}

export const CLOSED: CircuitState = {
  failures: 0, lastFailureAtMs: null, openedAtMs: null, reason: null, openUntilMs: null, cooldownMs: 0, probe: null
}

/** The longest cooldown, however often the circuit opens again. */
export const MAX_COOLDOWN_MS = 3_600_000

export const circuitPhase = (state: CircuitState, nowMs: number): CircuitPhase =>
  state.openUntilMs === null ? "closed" : nowMs < state.openUntilMs ? "open" : "probing"

/** An attempt's outcome as the circuit counts it. */
export type Verdict = "failure" | "answer" | "unsent"

/**
 * A network error, a timeout or a 5xx other than 503 is a failure; any other response an answer; a
 * request refused before it was sent (`invalid_request`: nothing reached the origin) neither.
 */
export const verdictOf = (outcome: { readonly httpStatus: number | null; readonly errorKind: string | null }): Verdict => {
  if (outcome.errorKind === "invalid_request") return "unsent"
  if (outcome.errorKind !== null || outcome.httpStatus === null) return "failure"
  return outcome.httpStatus >= 500 && outcome.httpStatus !== 503 ? "failure" : "answer"
}

/** What a failed attempt says, for the record of why a circuit opened. */
export const failureReason = (outcome: {
  readonly httpStatus: number | null
  readonly errorKind: string | null
  readonly errorMessage?: string | null
}): string => {
  const text = outcome.errorKind === null
    ? `HTTP ${outcome.httpStatus}`
    : `${outcome.errorKind}${outcome.errorMessage ? `: ${outcome.errorMessage}` : ""}`
  return text.length > 200 ? `${text.slice(0, 199)}…` : text
}

/** One outcome of an attempt to the origin, as a node reports it (on the database's clock). */
export type CircuitEvent =
  | { readonly _tag: "Failure"; readonly atMs: number; readonly reason: string }
  | { readonly _tag: "Answer"; readonly atMs: number }
  /** The outcome of the probe `node` claimed. */
  | { readonly _tag: "Probed"; readonly node: string; readonly verdict: Verdict; readonly reason: string }

const opened = (state: CircuitState, cooldownMs: number, reason: string, nowMs: number): CircuitState => ({
  ...state,
  failures: 0,
  lastFailureAtMs: null,
  openedAtMs: nowMs,
  reason,
  openUntilMs: nowMs + cooldownMs,
  cooldownMs,
  probe: null
})

const closed = (state: CircuitState): CircuitState => ({ ...CLOSED, openedAtMs: state.openedAtMs, reason: state.reason })

/** The state after one event at `nowMs`, with whether it opened the circuit. */
export const circuitAfter = (
  state: CircuitState,
  event: CircuitEvent,
  settings: CircuitSettings,
  nowMs: number
): { readonly state: CircuitState; readonly opened: boolean } => {
  const phase = circuitPhase(state, nowMs)
  switch (event._tag) {
    case "Failure": {
      // while open or probing only the probe counts: this attempt left before the circuit opened
      if (phase !== "closed") return { state, opened: false }
      const failures = state.failures + 1
      if (failures >= settings.failures) return { state: opened(state, settings.cooldownSeconds * 1000, event.reason, nowMs), opened: true }
      return { state: { ...state, failures, lastFailureAtMs: Math.max(state.lastFailureAtMs ?? -Infinity, event.atMs) }, opened: false }
    }
    case "Answer":
      // a reset covers the failures that ended before this answer, not one recorded after it
      if (phase !== "closed" || state.failures === 0 || (state.lastFailureAtMs ?? -Infinity) > event.atMs) return { state, opened: false }
      return { state: { ...state, failures: 0, lastFailureAtMs: null }, opened: false }
    case "Probed": {
      // a probe taken over meanwhile (its node was found gone) is no longer this one's to settle
      if (state.probe?.node !== event.node) return { state, opened: false }
      if (event.verdict === "answer") return { state: closed(state), opened: false }
      if (event.verdict === "unsent") return { state: { ...state, probe: null }, opened: false }
      const cooldownMs = Math.min(MAX_COOLDOWN_MS, Math.max(settings.cooldownSeconds * 1000, 2 * state.cooldownMs))
      return { state: opened(state, cooldownMs, event.reason, nowMs), opened: true }
    }
  }
}

/** Events in the order they happened, one after the other; whether any opened the circuit. */
export const circuitAfterAll = (
  state: CircuitState,
  events: ReadonlyArray<CircuitEvent>,
  settings: CircuitSettings,
  nowMs: number
): { readonly state: CircuitState; readonly opened: boolean } => {
  let current = state
  let anyOpened = false
  for (const event of events) {
    const next = circuitAfter(current, event, settings, nowMs)
    current = next.state
    anyOpened ||= next.opened
  }
  return { state: current, opened: anyOpened }
}

/**
 * `node` claims the probe: granted while probing when nobody holds it, when it holds it already, or
 * when its holder is gone (`holderGone`: absent from the database's sessions). Null: not granted.
 */
export const claimProbe = (state: CircuitState, node: string, holderGone: boolean, nowMs: number): CircuitState | null => {
  if (circuitPhase(state, nowMs) !== "probing") return null
  if (state.probe !== null && state.probe.node !== node && !holderGone) return null
  return { ...state, probe: { node, sinceMs: state.probe?.node === node ? state.probe.sinceMs : nowMs } }
}

/** `node` gives its unused probe back (it had nothing to send after all, or it stops). */
export const releaseProbe = (state: CircuitState, node: string): CircuitState | null =>
  state.probe?.node === node ? { ...state, probe: null } : null
