// One trigger: its request (method, URL, headers, body), its details, and its executions with
// status, timing, error kind and the response body; cancel and replay buttons that follow the API's
// rules (cancel: pending one-shots and active generators; replay: completed ones) and show its
// answers as they are. Refreshed every 3 s while something may still happen. The status shows with
// the outcome (a dead letter is `completed` too); a per-trigger retry policy reads as words; a queued
// trigger whose origin holds it back (GET /targets) says why.
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Badge, Empty, formatMs, formatTime, html, Link, messageOf, Notice, PageHeader, StatusBadges, Time, useLoad } from "../ui.ts"
import type { ExecutionView, RetryView, TriggerView } from "../../src/domain/responses.ts"
import type { TargetView } from "../../src/domain/targetPolicy.ts"

/** A per-trigger retry policy as short lines: `exponential, at most 5 attempts`, `first retry after 30 s`… */
const retryLines = (retry: RetryView): Array<string> => [
  `${retry.strategy}, ${retry.maxAttempts === null ? "unlimited attempts" : `at most ${retry.maxAttempts} attempt${retry.maxAttempts === 1 ? "" : "s"}`}`,
  ...(retry.strategy === "none" ? [] : [
    `first retry after ${retry.initialDelaySeconds} s${retry.strategy === "exponential" ? ", then doubling" : ""}`,
    ...(retry.maxDelaySeconds === null ? [] : [`delays at most ${retry.maxDelaySeconds} s`]),
    ...(retry.jitter ? ["with jitter (×0.5 to ×1.5)"] : []),
    `retries on ${retry.retryOn.replace(/_/g, " ")}`
  ])
]

const PENDING = new Set(["registered", "skipped", "retrying"])
const SETTLING = new Set(["registered", "queued", "running", "retrying"])

const originOf = (url: string): string | null => {
  try {
    return new URL(url).origin
  } catch {
    return null
  }
}

const at = (iso: string | null) => (iso === null ? "" : formatTime(iso))

/** Why a queued trigger waits for its origin (docs/protecting-targets.md), from GET /targets; null when its origin holds nothing back. */
const originWait = (target: TargetView): string | null => {
  if (target.circuit === "open") {
    return `its circuit opened at ${at(target.circuitOpenedAt)} after ${target.circuitReason ?? "failures"}: nothing is sent to it before ${at(target.heldUntil)}, then one probe`
  }
  if (target.circuit === "probing") return "its circuit is probing: one attempt goes first, and its answer decides"
  if (target.heldUntil !== null) return `it answered 429 or 503: it is held until ${at(target.heldUntil)}`
  if (target.queued > 0) return `its target policy's limit is reached (${target.inFlight} in flight, ${target.queued} waiting)`
  return null
}

/** Says when a queued trigger waits for its origin. */
const OriginWait = ({ url }: { url: string }) => {
  const targets = useLoad(() => api<ReadonlyArray<TargetView>>("GET", "/targets"), [], 3_000)
  const origin = originOf(url)
  const target = targets.data?.find((t) => t.origin === origin)
  const why = target === undefined ? null : originWait(target)
  return why === null ? null : html`<${Notice} kind="info"><span class="origin-wait">Waiting for its origin <span class="mono break">${origin}</span>: ${why}.</span></${Notice}>`
}

const cancellable = (job: TriggerView) => (job.kind === "generator" ? job.status === "active" : PENDING.has(job.status))

/** One row a header: the API joins a repeated header's values with ", " (docs/reading.md "A trigger"). */
const headerRows = (headers: Record<string, string>) => Object.entries(headers)

const BodyView = ({ body, contentType }: { body: TriggerView["body"]; contentType: string | null }) => {
  if (body === null) return html`<span class="muted">no body</span>`
  return html`<div>
    <div class="muted small">${contentType ?? "no content type"} · ${body.encoding} · ${body.size} bytes</div>
    <pre class="code">${body.value ?? "(too large to show here)"}</pre>
  </div>`
}

/** An execution: its summary line, then its error, where it went (marked when not the trigger's URL: a replay's override), and the response. */
const ExecutionRow = ({ execution, open, triggerUrl }: { execution: ExecutionView; open: boolean; triggerUrl: string }) => html`
  <details class="execution" open=${open} data-attempt=${execution.attempt}>
    <summary>
      <span class="attempt">#${execution.attempt}</span>
      <${Badge} text=${execution.status} />
      ${execution.isDeadLetter ? html`<${Badge} text="dead letter" />` : null}
      ${execution.triggeredBy === null ? null : html`<span class="tag">replay</span>`}
      ${execution.url === triggerUrl ? null : html`<span class="tag override" title=${execution.url}>other URL</span>`}
      <span class="http">${execution.httpStatus === null ? (execution.errorKind ?? "no response") : `HTTP ${execution.httpStatus}`}</span>
      <${Time} iso=${execution.startedAt} />
      <span class="muted">${formatMs(execution.durationMs)}</span>
    </summary>
    <div class="execution-body">
      <p class="sent-to"><span class="muted small">Sent to</span> <span class="mono break">${execution.url}</span>${execution.url === triggerUrl
        ? null : html` <span class="muted small">(the replay's URL, not the trigger's)</span>`}</p>
      ${execution.errorKind === undefined && execution.errorMessage === undefined ? null : html`
        <p class="error-line"><strong>${execution.errorKind ?? "error"}</strong>${execution.errorCode === undefined ? "" : ` (${execution.errorCode})`}: ${execution.errorMessage ?? ""}</p>`}
      <div class="muted small">Response body</div>
      <pre class="code response-body">${execution.responseBody ?? "(none)"}</pre>
      ${execution.responseHeaders === null ? null : html`<div class="muted small">Response headers</div>
        <table class="compact kv">${Object.entries(execution.responseHeaders).map(([k, v]) => html`<tr><td class="mono">${k}</td><td class="mono">${v}</td></tr>`)}</table>`}
    </div>
  </details>`

export const TriggerPage = ({ id, projectId }: { id: string; projectId: string }) => {
  const [answer, setAnswer] = useState<{ kind: "ok" | "error"; text: string } | undefined>(undefined)
  const job = useLoad(() => api<TriggerView>("GET", `/jobs/${id}`), [id], 3_000)
  const executions = useLoad(() => api<{ executions: ReadonlyArray<ExecutionView> }>("GET", `/jobs/${id}/executions`), [id], 3_000)
  const act = async (what: "cancel" | "replay") => {
    if (what === "cancel" && !confirm("Cancel this trigger?")) return
    if (what === "replay" && !confirm(`Replay this trigger? Attempt ${(job.data?.attempts ?? 0) + 1} is sent to ${job.data?.url ?? "its URL"}.`)) return
    try {
      if (what === "cancel") await api("POST", `/jobs/${id}/cancel`)
      else await api("POST", `/jobs/${id}/executions`, { triggeredBy: "retry" })
      setAnswer({ kind: "ok", text: what === "cancel" ? "Cancelled." : "Replay queued: a new attempt is on its way." })
    } catch (e) {
      setAnswer({ kind: "error", text: messageOf(e) })
    }
    await Promise.all([job.reload(), executions.reload()])
  }
  if (job.error !== undefined && job.data === undefined) return html`<${Notice} kind="error">${job.error}</${Notice}>`
  const data = job.data
  if (data === undefined) return html`<div class="muted">Loading…</div>`
  const list = executions.data?.executions ?? []
  return html`<div>
    <div class="crumbs"><${Link} href=${`/dashboard/p/${projectId}/triggers`}>← Triggers</${Link}></div>
    <${PageHeader} title=${data.title ?? `${data.method} ${data.url}`} subtitle=${html`<span class="mono break">${data.id}</span>`}>
      <${StatusBadges} status=${data.status} outcome=${data.outcome} />
      <button onClick=${() => act("replay")} disabled=${data.kind !== "job" || data.status !== "completed"}
        title="Replay: a completed trigger gets a new attempt">Replay</button>
      <button class="danger" onClick=${() => act("cancel")} disabled=${!cancellable(data)}
        title="Cancel: pending triggers and active generators">Cancel</button>
    </${PageHeader}>
    ${answer === undefined ? null : html`<${Notice} kind=${answer.kind}>${answer.text}</${Notice}>`}
    ${data.status === "queued" ? html`<${OriginWait} url=${data.url} />` : null}
    <div class="grid two">
      <section class="card">
        <h2 class="card-title">Request</h2>
        <p class="request-line"><span class="method">${data.method}</span> <span class="mono break">${data.url}</span></p>
        <div class="muted small">Headers</div>
        ${headerRows(data.headers).length === 0 ? html`<p class="muted">none</p>` : html`
          <table class="compact kv">${headerRows(data.headers).map(([k, v]) => html`<tr><td class="mono">${k}</td><td class="mono break">${v}</td></tr>`)}</table>`}
        <div class="muted small">Body</div>
        <${BodyView} body=${data.body} contentType=${data.contentType} />
      </section>
      <section class="card">
        <h2 class="card-title">Details</h2>
        <table class="compact kv">
          <tr><td>Kind</td><td>${data.kind}${data.generatorId === null ? "" : html` (instance of <${Link} href=${`/dashboard/p/${projectId}/triggers/${data.generatorId}`}>its generator</${Link}>)`}</td></tr>
          <tr><td>Scheduled</td><td><${Time} iso=${data.scheduledAt} /></td></tr>
          <tr><td>Attempts</td><td>${data.attempts}</td></tr>
          <tr><td>Tags</td><td>${data.tags.length === 0 ? html`<span class="muted">none</span>` : data.tags.map((t) => html`<span class="tag">${t}</span>`)}</td></tr>
          <tr><td>Custom key</td><td>${data.customKey ?? html`<span class="muted">none</span>`}</td></tr>
          <tr><td>Retry policy</td><td class="retry-policy">${data.retry === null
            ? html`<span class="muted">project or tag default</span>`
            : retryLines(data.retry).map((line) => html`<div>${line}</div>`)}</td></tr>
          <tr><td>Created</td><td><${Time} iso=${data.createdAt} /></td></tr>
          <tr><td>Updated</td><td><${Time} iso=${data.updatedAt} /></td></tr>
        </table>
      </section>
    </div>
    <section class="card">
      <h2 class="card-title">Executions</h2>
      ${list.length === 0 ? html`<${Empty}>No attempt yet.</${Empty}>` : list.map((execution, i) =>
        html`<${ExecutionRow} key=${execution.id} execution=${execution} open=${i === list.length - 1} triggerUrl=${data.url} />`)}
    </section>
    ${SETTLING.has(data.status) ? html`<p class="muted small">Refreshing every 3 s while it settles.</p>` : null}
  </div>`
}
