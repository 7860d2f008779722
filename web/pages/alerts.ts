// Failure alerts of the project: a Slack-compatible webhook and/or e-mail recipients (SMTP_URL on
// the service), sent when triggers are dead-lettered or a circuit of an origin opens, at most one
// message a minute; a test button, and the latest messages with their outcome (a failing target is
// recorded, not retried). A test
// reports each target on its own: green when all arrived, red when none did, amber when some did.
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Badge, Empty, html, messageOf, Notice, PageHeader, Time, useLoad } from "../ui.ts"

interface Alerts {
  readonly webhookUrl: string | null
  readonly emailRecipients: Array<string>
  readonly emailConfigured: boolean
  readonly recent: Array<{ channel: string; sentAt: string; deadLetters: number; circuitOpenings: number; test: boolean; error: string | null }>
}

/** `3 dead letters`, `1 circuit opened`, or both. */
const reported = (r: { deadLetters: number; circuitOpenings: number }) =>
  [
    ...(r.deadLetters > 0 || r.circuitOpenings === 0 ? [`${r.deadLetters} dead letter${r.deadLetters === 1 ? "" : "s"}`] : []),
    ...(r.circuitOpenings > 0 ? [`${r.circuitOpenings} circuit${r.circuitOpenings === 1 ? "" : "s"} opened`] : [])
  ].join(", ")

export const AlertsPage = () => {
  const { data, error, reload } = useLoad(() => api<Alerts>("GET", "/alerts"), [], 10_000)
  const [answer, setAnswer] = useState<{ kind: "ok" | "warn" | "error"; text: unknown } | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const save = async (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.target as HTMLFormElement)
    try {
      await api("PUT", "/alerts", {
        webhookUrl: String(form.get("webhookUrl") ?? "").trim() || null,
        emailRecipients: String(form.get("emailRecipients") ?? "").split(/[\s,;]+/).filter((e) => e !== "")
      })
      setAnswer({ kind: "ok", text: "Saved." })
    } catch (e) {
      setAnswer({ kind: "error", text: messageOf(e) })
    }
    await reload()
  }
  const test = async () => {
    setBusy(true)
    try {
      const { results } = await api<{ results: Array<{ channel: string; error: string | null }> }>("POST", "/alerts/test")
      const failed = results.filter((r) => r.error !== null).length
      setAnswer({
        kind: failed === 0 ? "ok" : failed === results.length ? "error" : "warn",
        text: html`Test alert: ${results.map((r) => html`<span class="result" data-channel=${r.channel}>
          <${Badge} text=${r.error === null ? "sent" : "failed"} tone=${r.error === null ? "green" : "red"} /> ${r.channel} ${r.error === null ? "sent" : `failed: ${r.error}`}</span>`)}`
      })
    } catch (e) {
      setAnswer({ kind: "error", text: messageOf(e) })
    } finally {
      setBusy(false)
    }
    await reload()
  }
  return html`<div>
    <${PageHeader} title="Alerts" subtitle="A message when triggers are dead-lettered or an origin's circuit opens: at most one a minute per target, listing the burst." />
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    ${answer === undefined ? null : html`<${Notice} kind=${answer.kind}>${answer.text}</${Notice}>`}
    ${data === undefined ? html`<div class="muted">Loading…</div>` : html`
      <form class="card narrow" onSubmit=${save} key=${JSON.stringify([data.webhookUrl, data.emailRecipients])}>
        <label><span>Chat webhook URL (Slack-compatible: receives <code>{"text": …}</code>)</span>
          <input name="webhookUrl" type="url" defaultValue=${data.webhookUrl ?? ""} placeholder="https://hooks.slack.com/services/…" /></label>
        <label><span>E-mail recipients (one per line)</span>
          <textarea name="emailRecipients" rows="3" placeholder="ops@example.com" defaultValue=${data.emailRecipients.join("\n")}></textarea></label>
        ${data.emailConfigured ? null : html`<p class="muted small">E-mail is off: the service has no <code>SMTP_URL</code>.</p>`}
        <div class="form-actions">
          <button class="primary" type="submit">Save</button>
          <button type="button" onClick=${test} disabled=${busy}>${busy ? "Sending…" : "Send a test alert"}</button>
        </div>
      </form>
      <section class="card flush">
        <h2 class="card-title padded">Latest messages</h2>
        ${data.recent.length === 0 ? html`<${Empty}>No alert sent yet.</${Empty}>` : html`<table class="rows stack">
          <thead><tr><th>Sent (UTC)</th><th>Target</th><th>Reported</th><th>Outcome</th></tr></thead>
          <tbody>${data.recent.map((r) => html`<tr>
            <td data-label="Sent (UTC)"><${Time} iso=${r.sentAt} /></td>
            <td data-label="Target">${r.channel === "webhook" ? "chat webhook" : "e-mail"}</td>
            <td data-label="Reported">${r.test ? "test" : reported(r)}</td>
            <td data-label="Outcome">${r.error === null ? html`<${Badge} text="sent" tone="green" />` : html`<span><${Badge} text="failed" tone="red" /> <span class="small">${r.error}</span></span>`}</td>
          </tr>`)}</tbody>
        </table>`}
      </section>`}
  </div>`
}
