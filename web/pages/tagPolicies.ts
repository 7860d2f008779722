// Tag policies: the list with live queued / in-flight counts and the hold after a refusal of the
// target (refreshed every 5 s), a form to create one or edit one (PUT: a field emptied is cleared),
// delete; the API's validation messages shown as they are.
import { useState } from "preact/hooks"
import type { TagPolicyView } from "../../src/domain/tagPolicy.ts"
import { api } from "../api.ts"
import { Empty, formatTime, html, messageOf, Notice, PageHeader, useLoad } from "../ui.ts"

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 }
const windowSeconds = (window: string) => parseInt(window, 10) * (UNIT_SECONDS[window.slice(-1)] ?? 1)

/** `{"1h":500,"1s":10}` → `10/1s, 500/1h` (shortest window first). */
export const throughputText = (t: Record<string, number> | null) =>
  t === null ? "" : Object.entries(t).sort(([a], [b]) => windowSeconds(a) - windowSeconds(b)).map(([window, rate]) => `${rate}/${window}`).join(", ")

/** `10/1s, 500/1h` → `{"1s":10,"1h":500}`; undefined when unreadable. */
export const parseThroughput = (text: string): Record<string, number> | null | undefined => {
  if (text.trim() === "") return null
  const out: Record<string, number> = {}
  for (const part of text.split(",")) {
    const match = /^\s*([0-9.]+)\s*\/\s*([0-9]+[smhd])\s*$/.exec(part)
    if (match === null) return undefined
    out[match[2]!] = Number(match[1])
  }
  return out
}

export const numberOrNull = (value: FormDataEntryValue | null) => (value === null || String(value).trim() === "" ? null : Number(value))
const textOrNull = (value: FormDataEntryValue | null) => (value === null || String(value) === "" ? null : String(value))

const PolicyForm = ({ policy, onDone }: { policy: TagPolicyView | null; onDone: () => Promise<void> }) => {
  const [error, setError] = useState<string | undefined>(undefined)
  const submit = async (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.target as HTMLFormElement)
    const throughput = parseThroughput(String(form.get("throughput") ?? ""))
    if (throughput === undefined) return setError("Throughput: write rates per window, e.g. 10/1s, 500/1h")
    const fields: Record<string, unknown> = {
      tag: String(form.get("tag") ?? "").trim(),
      maxConcurrent: numberOrNull(form.get("maxConcurrent")),
      requestTimeoutSeconds: numberOrNull(form.get("requestTimeoutSeconds")),
      throughput,
      retryStrategy: textOrNull(form.get("retryStrategy")),
      retryMaxAttempts: numberOrNull(form.get("retryMaxAttempts")),
      retryInitialDelaySeconds: numberOrNull(form.get("retryInitialDelaySeconds")),
      retryMaxDelaySeconds: numberOrNull(form.get("retryMaxDelaySeconds")),
      retryOn: textOrNull(form.get("retryOn"))
    }
    try {
      if (policy === null) {
        // a create leaves unset fields out (retryMaxAttempts left out is stored as 3)
        await api("POST", "/tag-policies", Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null)))
      } else {
        await api("PUT", `/tag-policies/${policy.id}`, fields)
      }
      setError(undefined)
      if (policy === null) (event.target as HTMLFormElement).reset()
      await onDone()
    } catch (e) {
      setError(messageOf(e))
    }
  }
  const p = policy
  return html`<form class="card policy-form" onSubmit=${submit}>
    <h2 class="card-title">${p === null ? "New tag policy" : `Edit policy of tag ${p.tag}`}</h2>
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    <div class="form-grid">
      <label>Tag<input name="tag" required defaultValue=${p?.tag ?? ""} placeholder="billing" /></label>
      <label>Max concurrent<input name="maxConcurrent" type="number" min="1" defaultValue=${p?.maxConcurrent ?? ""} /></label>
      <label>Request timeout (s)<input name="requestTimeoutSeconds" type="number" min="1" max="3600" defaultValue=${p?.requestTimeoutSeconds ?? ""} /></label>
      <label>Throughput<input name="throughput" defaultValue=${throughputText(p?.throughput ?? null)} placeholder="10/1s, 500/1h" /></label>
      <label>Retry strategy<select name="retryStrategy">
        ${["", "none", "fixed", "exponential"].map((s) => html`<option value=${s} selected=${(p?.retryStrategy ?? "") === s}>${s === "" ? "— (none set)" : s}</option>`)}
      </select></label>
      <label>Max attempts<input name="retryMaxAttempts" type="number" min="1" defaultValue=${p?.retryMaxAttempts ?? ""} placeholder="3" /></label>
      <label>Initial delay (s)<input name="retryInitialDelaySeconds" type="number" min="0" defaultValue=${p?.retryInitialDelaySeconds ?? ""} /></label>
      <label>Max delay (s)<input name="retryMaxDelaySeconds" type="number" min="0" defaultValue=${p?.retryMaxDelaySeconds ?? ""} /></label>
      <label>Retry on<select name="retryOn">
        ${["", "network_only", "5xx_and_network", "non_2xx"].map((s) => html`<option value=${s} selected=${(p?.retryOn ?? "") === s}>${s === "" ? "— (5xx_and_network)" : s}</option>`)}
      </select></label>
    </div>
    <div class="form-actions">
      <button class="primary" type="submit">${p === null ? "Create policy" : "Save changes"}</button>
      ${p === null ? null : html`<button type="button" onClick=${() => onDone()}>Close</button>`}
    </div>
  </form>`
}

export const TagPoliciesPage = () => {
  const { data, error, reload } = useLoad(() => api<ReadonlyArray<TagPolicyView>>("GET", "/tag-policies"), [], 5_000)
  const [editing, setEditing] = useState<TagPolicyView | null>(null)
  const [answer, setAnswer] = useState<string | undefined>(undefined)
  const remove = async (policy: TagPolicyView) => {
    if (!confirm(`Delete the policy of tag ${policy.tag}? Its held-back triggers are released.`)) return
    try {
      await api("DELETE", `/tag-policies/${policy.id}`)
      setAnswer(undefined)
    } catch (e) {
      setAnswer(messageOf(e))
    }
    await reload()
  }
  return html`<div>
    <${PageHeader} title="Tag policies" subtitle="Concurrency, throughput, timeout and retry rules of the triggers carrying a tag; live counts and holds (after a 429 or 503 of the target) every 5 s." />
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    ${answer === undefined ? null : html`<${Notice} kind="error">${answer}</${Notice}>`}
    <div class="policy-list">${data === undefined ? html`<div class="muted">Loading…</div>` : data.length === 0 ? html`<div class="card"><${Empty}>No tag policy yet.</${Empty}></div>` : html`
      <div class="card flush"><table class="rows stack">
        <thead><tr><th>Tag</th><th class="num">Max concurrent</th><th>Throughput</th><th class="num">Timeout</th><th>Retry</th>
          <th class="num">Queued</th><th class="num">In flight</th><th>Held</th><th></th></tr></thead>
        <tbody>${data.map((p) => html`<tr key=${p.id} data-policy=${p.tag}>
          <td data-label="Tag"><code>${p.tag}</code></td>
          <td class="num" data-label="Max concurrent">${p.maxConcurrent ?? "—"}</td>
          <td data-label="Throughput">${throughputText(p.throughput) || "—"}</td>
          <td class="num" data-label="Timeout">${p.requestTimeoutSeconds === null ? "—" : `${p.requestTimeoutSeconds} s`}</td>
          <td data-label="Retry">${p.retryStrategy === null ? "—" : `${p.retryStrategy}${p.retryMaxAttempts === null ? ", unlimited" : `, ${p.retryMaxAttempts} attempts`}`}</td>
          <td class="num live" data-label="Queued">${p.queued}</td>
          <td class="num live" data-label="In flight">${p.inFlight}</td>
          <td class="live" title=${p.heldUntil === null ? "" : "The target answered 429 or 503: nothing of the tag starts before then"} data-label="Held">${p.heldUntil === null
            ? "—"
            : html`<span class="badge">held until ${formatTime(p.heldUntil)}</span>`}</td>
          <td class="actions-cell">
            <button class="small" onClick=${() => setEditing(p)}>Edit</button>
            <button class="small danger" onClick=${() => remove(p)}>Delete</button>
          </td>
        </tr>`)}</tbody>
      </table></div>`}</div>
    <${PolicyForm} key=${editing?.id ?? "new"} policy=${editing} onDone=${async () => { setEditing(null); await reload() }} />
  </div>`
}
