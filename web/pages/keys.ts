// API keys of the project: create one with an optional label (its clear key is shown this once),
// list them with label, hint, creation and last use (written at most once a minute), revoke one (every node refuses it at once).
import { useState } from "preact/hooks"
import type { ApiKeyView } from "../../src/domain/responses.ts"
import { api } from "../api.ts"
import { Badge, Empty, html, messageOf, Notice, PageHeader, Time, useLoad } from "../ui.ts"

export const KeysPage = () => {
  const { data, error, reload } = useLoad(() => api<{ keys: ReadonlyArray<ApiKeyView> }>("GET", "/keys"), [], 30_000)
  const [created, setCreated] = useState<string | undefined>(undefined)
  const [copied, setCopied] = useState(false)
  const [answer, setAnswer] = useState<string | undefined>(undefined)
  const [label, setLabel] = useState("")
  const create = async (event?: Event) => {
    event?.preventDefault()
    try {
      const key = await api<ApiKeyView & { key: string }>("POST", "/keys", label.trim() === "" ? {} : { label })
      setLabel("")
      setCreated(key.key)
      setCopied(false)
      setAnswer(undefined)
    } catch (e) {
      setAnswer(messageOf(e))
    }
    await reload()
  }
  const revoke = async (key: ApiKeyView) => {
    if (!confirm(`Revoke key ${key.hint}? Requests with it are refused at once.`)) return
    try {
      await api("DELETE", `/keys/${key.id}`)
    } catch (e) {
      setAnswer(messageOf(e))
    }
    await reload()
  }
  const keys = data?.keys ?? []
  return html`<div>
    <${PageHeader} title="API keys" subtitle="Keys authenticate /schedule, /cancel and the API. Only a hint of each is kept; last use is updated within a minute.">
      <form class="inline-form" onSubmit=${create}>
        <input name="label" aria-label="Label of the new key" placeholder="Label (optional)" maxLength=${100} value=${label}
          onInput=${(e: Event) => setLabel((e.target as HTMLInputElement).value)} />
        <button class="primary" type="submit">Create key</button>
      </form>
    </${PageHeader}>
    ${answer === undefined ? null : html`<${Notice} kind="error">${answer}</${Notice}>`}
    ${created === undefined ? null : html`<div class="card new-key">
      <div><strong>New key</strong> — copy it now: it is shown only this once.</div>
      <div class="key-row">
        <code class="clear-key">${created}</code>
        <button onClick=${async () => { await navigator.clipboard?.writeText(created).catch(() => undefined); setCopied(true) }}>${copied ? "Copied" : "Copy"}</button>
        <button class="link" onClick=${() => setCreated(undefined)}>Done</button>
      </div>
    </div>`}
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    ${data === undefined ? html`<div class="muted">Loading…</div>` : keys.length === 0 ? html`<${Empty}>No key yet.</${Empty}>` : html`
      <div class="card flush"><table class="rows stack">
        <thead><tr><th>Key</th><th>Label</th><th>Created (UTC)</th><th>Last used (UTC)</th><th>State</th><th></th></tr></thead>
        <tbody>${[...keys].reverse().map((key) => html`<tr key=${key.id} data-key=${key.hint}>
          <td class="mono" data-label="Key">${key.hint}</td>
          <td class="key-label" data-label="Label">${key.label ?? html`<span class="muted">—</span>`}</td>
          <td data-label="Created (UTC)"><${Time} iso=${key.createdAt} /></td>
          <td data-label="Last used (UTC)">${key.lastUsedAt === null ? html`<span class="muted">never</span>` : html`<${Time} iso=${key.lastUsedAt} />`}</td>
          <td data-label="State">${key.revokedAt === null ? html`<${Badge} text="active" tone="green" />` : html`<${Badge} text="revoked" /> <span class="muted small"><${Time} iso=${key.revokedAt} /></span>`}</td>
          <td class="actions-cell">${key.revokedAt === null ? html`<button class="small danger" onClick=${() => revoke(key)}>Revoke</button>` : null}</td>
        </tr>`)}</tbody>
      </table></div>`}
  </div>`
}
