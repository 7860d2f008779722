// Targets (docs/protecting-targets.md): the origins held, open, probing, queued or in flight now
// (GET /targets: when and why a circuit opened, consecutive failures), and the target policies with
// their live state, editable (a form to create one or change one: PUT, a field emptied is cleared;
// delete). Refreshed every 3 s; the API's validation messages shown as they are.
import { useState } from "preact/hooks"
import type { TargetPolicyView, TargetView } from "../../src/domain/targetPolicy.ts"
import { api } from "../api.ts"
import { Badge, Empty, formatTime, html, messageOf, Notice, PageHeader, Time, useLoad } from "../ui.ts"
import { numberOrNull, parseThroughput, throughputText } from "./tagPolicies.ts"

const CIRCUIT_TONE = { closed: "green", open: "red", probing: "amber" } as const

export const CircuitBadge = ({ circuit }: { circuit: TargetView["circuit"] | null }) =>
  circuit === null ? html`<span class="muted">per origin</span>` : html`<${Badge} text=${circuit} tone=${CIRCUIT_TONE[circuit]} />`

const heldText = (heldUntil: string | null) =>
  heldUntil === null ? "—" : html`<span class="badge amber">held until ${formatTime(heldUntil)}</span>`

const limitsText = (p: TargetPolicyView) =>
  [
    p.maxConcurrent === null ? null : `${p.maxConcurrent} at a time`,
    p.throughput === null ? null : throughputText(p.throughput),
    p.circuitBreaker === null ? null : `open after ${p.circuitBreaker.failures} failures, ${p.circuitBreaker.cooldownSeconds} s`
  ].filter((part) => part !== null).join(" · ")

const PolicyForm = ({ policy, onDone }: { policy: TargetPolicyView | null; onDone: () => Promise<void> }) => {
  const [error, setError] = useState<string | undefined>(undefined)
  const submit = async (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.target as HTMLFormElement)
    const throughput = parseThroughput(String(form.get("throughput") ?? ""))
    if (throughput === undefined) return setError("Throughput: write rates per window, e.g. 10/1s, 500/1h")
    const failures = numberOrNull(form.get("failures"))
    const cooldownSeconds = numberOrNull(form.get("cooldownSeconds"))
    if ((failures === null) !== (cooldownSeconds === null)) return setError("Circuit breaker: give both the failures and the cooldown, or neither")
    const fields = {
      maxConcurrent: numberOrNull(form.get("maxConcurrent")),
      throughput,
      circuitBreaker: failures === null ? null : { failures, cooldownSeconds }
    }
    try {
      if (policy === null) {
        await api("POST", "/target-policies", { origin: String(form.get("origin") ?? "").trim(), ...fields })
        ;(event.target as HTMLFormElement).reset()
      } else {
        await api("PUT", `/target-policies/${policy.id}`, fields)
      }
      setError(undefined)
      await onDone()
    } catch (e) {
      setError(messageOf(e))
    }
  }
  const p = policy
  return html`<form class="card policy-form" onSubmit=${submit}>
    <h2 class="card-title">${p === null ? "New target policy" : `Edit the policy of ${p.origin}`}</h2>
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    <div class="form-grid">
      <label>Origin<input name="origin" required=${p === null} disabled=${p !== null} defaultValue=${p?.origin ?? ""}
        placeholder="https://api.example.com or *" /></label>
      <label>Max concurrent<input name="maxConcurrent" type="number" min="1" defaultValue=${p?.maxConcurrent ?? ""} /></label>
      <label>Throughput<input name="throughput" defaultValue=${throughputText(p?.throughput ?? null)} placeholder="10/1s, 500/1h" /></label>
      <label>Open after failures<input name="failures" type="number" min="1" defaultValue=${p?.circuitBreaker?.failures ?? ""} placeholder="5" /></label>
      <label>Cooldown (s)<input name="cooldownSeconds" type="number" min="1" max="3600" defaultValue=${p?.circuitBreaker?.cooldownSeconds ?? ""} placeholder="30" /></label>
    </div>
    <div class="form-actions">
      <button class="primary" type="submit">${p === null ? "Create policy" : "Save changes"}</button>
      ${p === null ? null : html`<button type="button" onClick=${() => onDone()}>Close</button>`}
    </div>
  </form>`
}

const OriginsCard = ({ targets }: { targets: ReadonlyArray<TargetView> | undefined }) => html`
  <section class="card flush">
    <h2 class="card-title padded">Origins now</h2>
    ${targets === undefined ? html`<div class="muted">Loading…</div>` : targets.length === 0
      ? html`<${Empty}>Nothing held, open, queued or in flight.</${Empty}>`
      : html`<table class="rows targets stack">
        <thead><tr><th>Origin</th><th>Circuit</th><th>Held</th><th class="num">Queued</th><th class="num">In flight</th>
          <th class="num">Failures in a row</th><th>Last opened</th></tr></thead>
        <tbody>${targets.map((t) => html`<tr key=${t.origin} data-origin=${t.origin}>
          <td class="mono origin" data-label="Origin">${t.origin}</td>
          <td data-label="Circuit"><${CircuitBadge} circuit=${t.circuit} /></td>
          <td data-label="Held">${heldText(t.heldUntil)}</td>
          <td class="num live" data-label="Queued">${t.queued}</td>
          <td class="num live" data-label="In flight">${t.inFlight}</td>
          <td class="num" data-label="Failures in a row">${t.consecutiveFailures}</td>
          <td class="small" data-label="Last opened">${t.circuitOpenedAt === null ? html`<span class="muted">never</span>` : html`<${Time} iso=${t.circuitOpenedAt} />
            <div class="muted break">${t.circuitReason ?? ""}</div>`}</td>
        </tr>`)}</tbody>
      </table>`}
  </section>`

export const TargetsPage = () => {
  const targets = useLoad(() => api<ReadonlyArray<TargetView>>("GET", "/targets"), [], 3_000)
  const policies = useLoad(() => api<ReadonlyArray<TargetPolicyView>>("GET", "/target-policies"), [], 3_000)
  const [editing, setEditing] = useState<TargetPolicyView | null>(null)
  const [answer, setAnswer] = useState<string | undefined>(undefined)
  const reload = () => Promise.all([targets.reload(), policies.reload()]).then(() => undefined)
  const remove = async (policy: TargetPolicyView) => {
    if (!confirm(`Delete the policy of ${policy.origin}? The triggers it holds back are released.`)) return
    try {
      await api("DELETE", `/target-policies/${policy.id}`)
      setAnswer(undefined)
    } catch (e) {
      setAnswer(messageOf(e))
    }
    await reload()
  }
  const error = targets.error ?? policies.error
  return html`<div>
    <${PageHeader} title="Targets" subtitle="Limits and a circuit breaker per destination (origin), whatever the triggers' tags; what is held, open or waiting now, every 3 s." />
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    ${answer === undefined ? null : html`<${Notice} kind="error">${answer}</${Notice}>`}
    <${OriginsCard} targets=${targets.data} />
    <div class="policy-list">${policies.data === undefined ? html`<div class="muted">Loading…</div>` : policies.data.length === 0
      ? html`<div class="card"><${Empty}>No target policy yet: without one nothing is limited per origin.</${Empty}></div>`
      : html`<div class="card flush"><h2 class="card-title padded">Policies</h2><table class="rows stack">
        <thead><tr><th>Origin</th><th>Limits</th><th>Circuit</th><th>Held</th><th class="num">Queued</th><th class="num">In flight</th><th></th></tr></thead>
        <tbody>${policies.data.map((p) => html`<tr key=${p.id} data-policy=${p.origin}>
          <td class="mono origin" data-label="Origin">${p.origin === "*" ? html`<strong>*</strong> <span class="muted">each origin</span>` : p.origin}</td>
          <td data-label="Limits">${limitsText(p)}</td>
          <td data-label="Circuit"><${CircuitBadge} circuit=${p.circuit} /></td>
          <td data-label="Held">${heldText(p.heldUntil)}</td>
          <td class="num live" data-label="Queued">${p.queued}</td>
          <td class="num live" data-label="In flight">${p.inFlight}</td>
          <td class="actions-cell">
            <button class="small" onClick=${() => setEditing(p)}>Edit</button>
            <button class="small danger" onClick=${() => remove(p)}>Delete</button>
          </td>
        </tr>`)}</tbody>
      </table></div>`}</div>
    <${PolicyForm} key=${editing?.id ?? "new"} policy=${editing} onDone=${async () => { setEditing(null); await reload() }} />
  </div>`
}
