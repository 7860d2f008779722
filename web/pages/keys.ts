// API keys of the project: create one (its clear key is shown this once), list them with hint,
// creation and last use (written at most once a minute), revoke one (every node refuses it at once).
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Badge, Empty, html, messageOf, Notice, PageHeader, Time, useLoad } from "../ui.ts"

interface Key {
  readonly id: string
  readonly hint: string
  readonly createdAt: string
  readonly lastUsedAt: string | null
  readonly revokedAt: string | null
}

export const KeysPage = () => {
  const { data, error, reload } = useLoad(() => api<{ keys: Array<Key> }>("GET", "/keys"), [], 30_000)
  const [created, setCreated] = useState<string | undefined>(undefined)
  const [copied, setCopied] = useState(false)
  const [answer, setAnswer] = useState<string | undefined>(undefined)
  const create = async () => {
    try {
      const key = await api<Key & { key: string }>("POST", "/keys")
      setCreated(key.key)
      setCopied(false)
      setAnswer(undefined)
    } catch (e) {
      setAnswer(messageOf(e))
    }
    await reload()
  }
  const revoke = async (key: Key) => {
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
      <button class="primary" onClick=${create}>Create key</button>
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
      <div class="card flush"><table class="rows">
        <thead><tr><th>Key</th><th>Created (UTC)</th><th>Last used (UTC)</th><th>State</th><th></th></tr></thead>
        <tbody>${[...keys].reverse().map((key) => html`<tr key=${key.id} data-key=${key.hint}>
          <td class="mono">${key.hint}</td>
          <td><${Time} iso=${key.createdAt} /></td>
          <td>${key.lastUsedAt === null ? html`<span class="muted">never</span>` : html`<${Time} iso=${key.lastUsedAt} />`}</td>
          <td>${key.revokedAt === null ? html`<${Badge} text="active" tone="green" />` : html`<${Badge} text="revoked" /> <span class="muted small"><${Time} iso=${key.revokedAt} /></span>`}</td>
          <td class="actions-cell">${key.revokedAt === null ? html`<button class="small danger" onClick=${() => revoke(key)}>Revoke</button>` : null}</td>
        </tr>`)}</tbody>
      </table></div>`}
  </div>`
}
