// The triggers that end in a dead letter now (GET /dead-letters, newest dead letter first, cursor
// paging): each with its title, status, attempt count and last attempt (when, why); a trigger
// replayed with success since is not listed, one being replayed shows as such without a Replay
// button. A replay is asked for behind a confirmation naming the trigger and where it goes; every
// trigger listed can be replayed at once (bulkAction.ts), with the same count as the overview's.
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import type { DeadLetterView } from "../../src/domain/responses.ts"
import { type Filter, SelectAllMatching } from "../bulkAction.ts"
import { Badge, Empty, html, Link, messageOf, Notice, PageHeader, shortId, Time, useLoad } from "../ui.ts"

/** The triggers whose latest attempt is a dead letter: what this page lists and "select all" replays. */
const DEAD_LETTERS: Filter = { deadLetter: true }

interface Page {
  readonly count: number
  readonly triggers: ReadonlyArray<DeadLetterView>
  readonly nextCursor: string | null
}

/** What a dead letter's last attempt got: its HTTP status or error kind, and the words that came with it. */
const LastError = ({ last }: { last: DeadLetterView["lastAttempt"] }) => {
  const words = last.errorMessage ?? last.responseExcerpt
  return html`<div class="last-error">
    <strong>${last.httpStatus === null ? (last.errorKind ?? "no response") : `HTTP ${last.httpStatus}`}</strong>
    ${words === null || words.trim() === "" ? null : html` <span class="muted small" title=${words}>${words}</span>`}
  </div>`
}

const nameOf = (trigger: DeadLetterView) => trigger.title ?? `${trigger.method} ${trigger.url}`

export const DeadLettersPage = ({ projectId }: { projectId: string }) => {
  const [cursors, setCursors] = useState<Array<string | null>>([null])
  const [answer, setAnswer] = useState<{ kind: "ok" | "error"; text: string } | undefined>(undefined)
  /** The trigger whose replay awaits confirmation. */
  const [confirming, setConfirming] = useState<DeadLetterView | undefined>(undefined)
  const cursor = cursors.at(-1)!
  const { data, error, reload } = useLoad(
    () => api<Page>("GET", `/dead-letters?limit=25${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`),
    [cursor],
    10_000
  )
  const replay = async (trigger: DeadLetterView) => {
    setConfirming(undefined)
    try {
      await api("POST", `/jobs/${trigger.id}/executions`, { triggeredBy: "retry" })
      setAnswer({ kind: "ok", text: `Replay of ${nameOf(trigger)} queued.` })
    } catch (e) {
      setAnswer({ kind: "error", text: messageOf(e) })
    }
    await reload()
  }
  return html`<div>
    <${PageHeader} title="Dead letters"
      subtitle="Triggers whose latest attempt is a dead letter: nothing more is tried unless you replay them. A trigger delivered by a replay since is not listed." />
    ${answer === undefined ? null : html`<${Notice} kind=${answer.kind}>${answer.text}</${Notice}>`}
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    <${SelectAllMatching} filter=${DEAD_LETTERS} actions=${["replay"]} onDone=${reload}
      describe=${(n: number) => `${n.toLocaleString("en")} ${n === 1 ? "trigger ends" : "triggers end"} in a dead letter now.`} />
    ${confirming === undefined ? null : html`<div class="card confirm" role="dialog" aria-label="Confirm replay">
      <p class="strong">Replay ${nameOf(confirming)}?</p>
      <p class="muted small">Attempt ${confirming.attempts + 1} is sent to <span class="mono break">${confirming.url}</span> with the stored method, headers and body.</p>
      <div class="form-actions">
        <button class="primary" onClick=${() => replay(confirming)}>Replay</button>
        <button onClick=${() => setConfirming(undefined)}>Back</button>
      </div>
    </div>`}
    ${data === undefined ? html`<div class="muted">Loading…</div>` : data.triggers.length === 0 ? html`<${Empty}>No trigger ends in a dead letter.</${Empty}>` : html`
      <div class="card flush"><table class="rows stack">
        <thead><tr><th>Trigger</th><th>Last attempt (UTC)</th><th>Last error</th><th class="num">Attempts</th><th></th></tr></thead>
        <tbody>${data.triggers.map((t) => html`<tr key=${t.id} data-dead-letter=${t.id}>
          <td class="trigger-cell" data-label="Trigger">
            <${Link} href=${`/dashboard/p/${projectId}/triggers/${t.id}`} class="ellipsis strong row-link">${nameOf(t)}</${Link}>
            <div class="muted small mono ellipsis" title=${t.url}>${shortId(t.id)}${t.title === null ? "" : ` · ${t.url}`}</div>
          </td>
          <td data-label="Last attempt"><${Time} iso=${t.lastAttempt.finishedAt} /></td>
          <td class="error-cell" data-label="Last error"><${LastError} last=${t.lastAttempt} /></td>
          <td class="num" data-label="Attempts">${t.attempts}</td>
          <td class="actions-cell">${t.status === "completed"
            ? html`<button class="small" onClick=${() => setConfirming(t)}>Replay</button>`
            : html`<${Badge} text=${`replaying (${t.status})`} tone="violet" />`}</td>
        </tr>`)}</tbody>
      </table></div>`}
    <div class="pager">
      <button disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>← Newer</button>
      <span class="muted">Page ${cursors.length}</span>
      <button disabled=${data?.nextCursor == null} onClick=${() => setCursors([...cursors, data!.nextCursor])}>Older →</button>
    </div>
  </div>`
}
