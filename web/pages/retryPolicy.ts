// The project's default retry policy (GET / PUT /project/retry-policy): used by triggers with no
// policy of their own whose tags express none. Saving sends every field; the API's message for a
// bad value is shown as it is.
import { useState } from "preact/hooks"
import type { ProjectRetryPolicyView } from "../../src/domain/retry.ts"
import { api } from "../api.ts"
import { html, messageOf, Notice, PageHeader, useLoad } from "../ui.ts"

export const RetryPolicyPage = () => {
  const { data, error, reload } = useLoad(() => api<ProjectRetryPolicyView>("GET", "/project/retry-policy"), [])
  const [answer, setAnswer] = useState<{ kind: "ok" | "error"; text: string } | undefined>(undefined)
  const submit = async (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.target as HTMLFormElement)
    const maxDelay = String(form.get("retryMaxDelaySeconds") ?? "").trim()
    try {
      await api("PUT", "/project/retry-policy", {
        retryStrategy: form.get("retryStrategy"),
        retryMaxAttempts: Number(form.get("retryMaxAttempts")),
        retryInitialDelaySeconds: Number(form.get("retryInitialDelaySeconds")),
        retryMaxDelaySeconds: maxDelay === "" ? null : Number(maxDelay),
        retryJitter: form.get("retryJitter") === "on",
        retryOn: form.get("retryOn")
      })
      setAnswer({ kind: "ok", text: "Saved." })
      await reload()
    } catch (e) {
      setAnswer({ kind: "error", text: messageOf(e) })
    }
  }
  return html`<div>
    <${PageHeader} title="Project retry policy"
      subtitle="Applies to triggers without a retry policy of their own whose tags express no retry opinion." />
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    ${data === undefined ? html`<div class="muted">Loading…</div>` : html`
      <form class="card narrow" onSubmit=${submit} key=${JSON.stringify(data)}>
        ${answer === undefined ? null : html`<${Notice} kind=${answer.kind}>${answer.text}</${Notice}>`}
        <div class="form-grid">
          <label>Strategy<select name="retryStrategy">
            ${["none", "fixed", "exponential"].map((s) => html`<option value=${s} selected=${data.retryStrategy === s}>${s}</option>`)}
          </select></label>
          <label>Max attempts (counts the first)<input name="retryMaxAttempts" type="number" min="1" defaultValue=${data.retryMaxAttempts} /></label>
          <label>Initial delay (s)<input name="retryInitialDelaySeconds" type="number" min="0" max="86400" defaultValue=${data.retryInitialDelaySeconds} /></label>
          <label>Max delay (s, empty: no cap)<input name="retryMaxDelaySeconds" type="number" min="0" max="86400" defaultValue=${data.retryMaxDelaySeconds ?? ""} /></label>
          <label>Retry on<select name="retryOn">
            ${["network_only", "5xx_and_network", "non_2xx"].map((s) => html`<option value=${s} selected=${data.retryOn === s}>${s}</option>`)}
          </select></label>
          <label class="checkbox"><input name="retryJitter" type="checkbox" defaultChecked=${data.retryJitter} /> Jitter (each delay × 0.5 to 1.5)</label>
        </div>
        <div class="form-actions"><button class="primary" type="submit">Save</button></div>
      </form>`}
  </div>`
}
