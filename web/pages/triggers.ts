// Triggers of the project, newest first: filters (status, outcome, kind, tag, custom key, dead letter,
// scheduled range), kept in the page's query string (a reload or a shared link keeps them), and cursor
// paging through GET /jobs; each row's title is a link to the trigger's
// page (a new tab, the keyboard), and its status shows with its outcome (a dead letter is `completed`
// too). Every trigger matching the filter can be cancelled or its dead letters replayed at once
// (bulkAction.ts).
import { useEffect, useRef, useState } from "preact/hooks"
import { api } from "../api.ts"
import type { TriggerView } from "../../src/domain/responses.ts"
import { type Filter, SelectAllMatching } from "../bulkAction.ts"
import { setQuery, useLocation } from "../router.ts"
import { Empty, html, Link, Notice, PageHeader, shortId, StatusBadges, Time, useLoad } from "../ui.ts"

const STATUSES = ["registered", "skipped", "queued", "running", "retrying", "completed", "cancelled", "active"]
const OUTCOMES = [["delivered", "delivered"], ["dead_letter", "dead letter"], ["cancelled", "cancelled"], ["skipped", "skipped"]] as const

interface Filters {
  readonly status: string
  readonly outcome: string
  readonly kind: string
  readonly tag: string
  readonly customKey: string
  /** "", "true" or "false". */
  readonly deadLetter: string
  /** datetime-local values, read as UTC by the API. */
  readonly scheduledFrom: string
  readonly scheduledTo: string
}

const FILTER_NAMES = ["status", "outcome", "kind", "tag", "customKey", "deadLetter", "scheduledFrom", "scheduledTo"] as const

/** The filters the address names (the query string's, by the API's names). */
const filtersOf = (query: URLSearchParams): Filters =>
  Object.fromEntries(FILTER_NAMES.map((name) => [name, query.get(name) ?? ""])) as unknown as Filters

/** The filter of a bulk action: the fields set, deadLetter as a boolean. */
const actionFilter = (filters: Filters): Filter =>
  Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== "")
    .map(([name, value]) => [name, name === "deadLetter" ? value === "true" : value]))

const queryOf = (filters: Filters, cursor: string | null) => {
  const query = new URLSearchParams({ limit: "25" })
  for (const [name, value] of Object.entries(filters)) if (value !== "") query.set(name, value)
  if (cursor !== null) query.set("cursor", cursor)
  return query.toString()
}

export const TriggersPage = ({ projectId }: { projectId: string }) => {
  const filters = filtersOf(useLocation().query)
  const key = JSON.stringify(filters)
  /** Cursors of the pages seen so far under these filters: the last one is the current page's. */
  const [paging, setPaging] = useState<{ readonly key: string; readonly cursors: Array<string | null> }>({ key, cursors: [null] })
  const cursors = paging.key === key ? paging.cursors : [null]
  const setCursors = (next: Array<string | null>) => setPaging({ key, cursors: next })
  const cursor = cursors.at(-1)!
  const { data, error, reload } = useLoad(
    () => api<{ jobs: ReadonlyArray<TriggerView>; nextCursor: string | null }>("GET", `/jobs?${queryOf(filters, cursor)}`),
    [key, cursor],
    10_000
  )
  // the form shows the address's filters (on arrival, back and forward)
  const form = useRef<HTMLFormElement>(null)
  useEffect(() => {
    for (const name of FILTER_NAMES) {
      const field = form.current?.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null
      if (field !== null && field !== undefined) field.value = filters[name]
    }
  }, [key])
  const apply = (event: Event) => {
    event.preventDefault()
    const data = new FormData(event.target as HTMLFormElement)
    setQuery(Object.fromEntries(FILTER_NAMES.map((name) => [name, String(data.get(name) ?? "").trim()])))
  }
  return html`<div>
    <${PageHeader} title="Triggers" subtitle="One-shot triggers, generators and their instances, newest first." />
    <form class="filters card" ref=${form} onSubmit=${apply}>
      <label>Status<select name="status"><option value="">any</option>${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
      <label>Outcome<select name="outcome"><option value="">any</option>${OUTCOMES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select></label>
      <label>Kind<select name="kind"><option value="">any</option><option value="job">job</option><option value="generator">generator</option></select></label>
      <label>Tag<input name="tag" placeholder="billing" /></label>
      <label>Custom key<input name="customKey" placeholder="order-42" /></label>
      <label>Latest attempt<select name="deadLetter"><option value="">any</option><option value="true">dead letter</option><option value="false">not a dead letter</option></select></label>
      <label>Scheduled from (UTC)<input name="scheduledFrom" type="datetime-local" /></label>
      <label>Scheduled before (UTC)<input name="scheduledTo" type="datetime-local" /></label>
      <div class="filter-actions">
        <button class="primary" type="submit">Apply</button>
        <button type="reset" onClick=${() => setQuery({})}>Clear</button>
      </div>
    </form>
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    <${SelectAllMatching} filter=${actionFilter(filters)} actions=${["cancel", "replay"]} onDone=${reload} />
    ${data === undefined ? html`<div class="muted">Loading…</div>` : data.jobs.length === 0 ? html`<${Empty}>No trigger matches.</${Empty}>` : html`
      <div class="card flush"><table class="rows stack">
        <thead><tr><th>Trigger</th><th>Status</th><th>Kind</th><th>Scheduled (UTC)</th><th class="num">Attempts</th><th>Tags</th></tr></thead>
        <tbody>${data.jobs.map((job) => html`<tr key=${job.id} data-trigger=${job.id}>
          <td class="trigger-cell" data-label="Trigger">
            <${Link} href=${`/dashboard/p/${projectId}/triggers/${job.id}`} class="ellipsis strong row-link">${job.title ?? `${job.method} ${job.url}`}</${Link}>
            <div class="muted small mono">${shortId(job.id)}${job.customKey === null ? "" : ` · key ${job.customKey}`}</div>
          </td>
          <td data-label="Status"><${StatusBadges} status=${job.status} outcome=${job.outcome} /></td>
          <td data-label="Kind">${job.kind}${job.generatorId === null ? "" : html` <span class="muted small">instance</span>`}</td>
          <td data-label="Scheduled (UTC)"><${Time} iso=${job.scheduledAt} /></td>
          <td class="num" data-label="Attempts">${job.attempts}</td>
          <td data-label="Tags">${job.tags.map((tag) => html`<span class="tag">${tag}</span>`)}</td>
        </tr>`)}</tbody>
      </table></div>`}
    <div class="pager">
      <button disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>← Newer</button>
      <span class="muted">Page ${cursors.length}</span>
      <button disabled=${data?.nextCursor == null} onClick=${() => setCursors([...cursors, data!.nextCursor])}>Older →</button>
    </div>
  </div>`
}
