// Dead letters of the project, newest first (GET /executions?deadLetterOnly=true, cursor paging):
// when, which trigger and target, why; each with a link to its trigger and a replay button; every
// trigger whose latest attempt is a dead letter can be replayed at once (bulkAction.ts).
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { type Filter, SelectAllMatching } from "../bulkAction.ts"
import { Empty, html, Link, messageOf, Notice, PageHeader, shortId, Time, useLoad } from "../ui.ts"
import type { Execution } from "./trigger.ts"

/** The triggers whose latest attempt is a dead letter: what "select all" replays here. */
const DEAD_LETTERS: Filter = { deadLetter: true }

export const DeadLettersPage = ({ projectId }: { projectId: string }) => {
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [answer, setAnswer] = useState<{ kind: "ok" | "error"; text: string } | undefined>(undefined)
  const cursor = cursors.at(-1)!
  const { data, error, reload } = useLoad(
    () => api<{ executions: Array<Execution>; nextCursor: string | null }>(
      "GET", `/executions?deadLetterOnly=true&limit=25${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`),
    [cursor],
    10_000
  )
  const replay = async (jobId: string) => {
    try {
      await api("POST", `/jobs/${jobId}/executions`, { triggeredBy: "retry" })
      setAnswer({ kind: "ok", text: `Replay of ${shortId(jobId)} queued.` })
    } catch (e) {
      setAnswer({ kind: "error", text: messageOf(e) })
    }
    await reload()
  }
  return html`<div>
    <${PageHeader} title="Dead letters" subtitle="Attempts after which no further attempt will be made." />
    ${answer === undefined ? null : html`<${Notice} kind=${answer.kind}>${answer.text}</${Notice}>`}
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    <${SelectAllMatching} filter=${DEAD_LETTERS} actions=${["replay"]} onDone=${reload}
      describe=${(n: number) => `${n.toLocaleString("en")} ${n === 1 ? "trigger ends" : "triggers end"} in a dead letter (its latest attempt).`} />
    ${data === undefined ? html`<div class="muted">Loading…</div>` : data.executions.length === 0 ? html`<${Empty}>No dead letter. </${Empty}>` : html`
      <div class="card flush"><table class="rows">
        <thead><tr><th>Failed at (UTC)</th><th>Trigger</th><th>Target</th><th class="num">Attempt</th><th>Outcome</th><th></th></tr></thead>
        <tbody>${data.executions.map((e) => html`<tr key=${e.id} data-dead-letter=${e.jobId}>
          <td><${Time} iso=${e.finishedAt} /></td>
          <td class="mono"><${Link} href=${`/dashboard/p/${projectId}/triggers/${e.jobId}`}>${shortId(e.jobId)}</${Link}></td>
          <td class="ellipsis mono target-cell" title=${e.url}>${e.url}</td>
          <td class="num">${e.attempt}</td>
          <td>
            <div>${e.httpStatus === null ? html`<strong>${e.errorKind ?? "no response"}</strong>` : html`<strong>HTTP ${e.httpStatus}</strong>`}</div>
            ${e.errorMessage === undefined ? null : html`<div class="muted small ellipsis" title=${e.errorMessage}>${e.errorMessage}</div>`}
          </td>
          <td class="actions-cell"><button class="small" onClick=${() => replay(e.jobId)}>Replay</button></td>
        </tr>`)}</tbody>
      </table></div>`}
    <div class="pager">
      <button disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>← Newer</button>
      <span class="muted">Page ${cursors.length}</span>
      <button disabled=${data?.nextCursor == null} onClick=${() => setCursors([...cursors, data!.nextCursor])}>Older →</button>
    </div>
  </div>`
}
