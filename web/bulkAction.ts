// "Select all that match this filter" (docs/bulk-actions.md), for the triggers and dead-letters pages: how many
// triggers the page's filter matches (a dry run of POST /actions), then, once selected, a cancel or
// a dead-letter replay of all of them (a cancel only under a filter) behind a confirmation naming the count and the action, then the
// action's progress (GET /actions/{id}, every half second) until it ends. A replay may send its
// attempts to another URL. The API's messages are shown as they are.
import "./bulkAction.css"
import { useEffect, useState } from "preact/hooks"
import { api } from "./api.ts"
import { html, messageOf, Notice } from "./ui.ts"

export type Filter = Record<string, string | boolean>
type Kind = "cancel" | "replay"

interface Action {
  readonly id: string
  readonly action: Kind
  readonly status: "running" | "completed" | "failed"
  readonly matched: number
  readonly processed: number
  readonly cancelled?: number
  readonly replayed?: number
  readonly untouched: Record<string, number>
}

const PROGRESS_EVERY_MS = 500

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en")} ${n === 1 ? one : many}`

/** What each action acts on and says. */
const WORDING: Record<Kind, { readonly button: string; readonly what: (n: number) => string; readonly doing: string; readonly done: string }> = {
  cancel: { button: "Cancel them", what: (n) => plural(n, "trigger"), doing: "Cancelling", done: "cancelled" },
  replay: { button: "Replay dead letters", what: (n) => plural(n, "dead letter"), doing: "Replaying", done: "replayed" }
}

/** The filter an action takes: a replay redrives the dead letters among the matching triggers. */
const actionFilter = (kind: Kind, filter: Filter): Filter => (kind === "replay" ? { ...filter, deadLetter: true } : filter)

const dryRun = (kind: Kind, filter: Filter) =>
  api<{ matched: number }>("POST", "/actions", { action: kind, filter: actionFilter(kind, filter), dryRun: true }).then((r) => r.matched)

const Progress = ({ action }: { action: Action }) => {
  const words = WORDING[action.action]
  const acted = action.cancelled ?? action.replayed ?? 0
  const untouched = Object.entries(action.untouched)
  const percent = action.matched === 0 ? 100 : Math.round((100 * action.processed) / action.matched)
  return html`<div class="bulk-progress" data-action-status=${action.status}>
    <div class="bulk-progress-line">
      <strong>${action.status === "running" ? `${words.doing}…` : action.status === "completed" ? "Done." : "Failed."}</strong>
      <span>${action.processed.toLocaleString("en")} of ${plural(action.matched, "trigger")} processed · ${acted.toLocaleString("en")} ${words.done}
        ${untouched.length === 0 ? "" : ` · untouched: ${untouched.map(([reason, n]) => `${reason} ${n}`).join(", ")}`}</span>
    </div>
    <div class="bulk-bar" role="progressbar" aria-valuenow=${percent} aria-valuemin="0" aria-valuemax="100"><div style=${`width: ${percent}%`}></div></div>
  </div>`
}

/**
 * The bar above a list: the count the filter matches, "select all", the actions (`actions`, in this
 * order), the confirmation, the progress. `onDone` reloads the list when an action ends.
 */
export const SelectAllMatching = ({ filter, actions, onDone, describe = (n) => `${plural(n, "trigger")} ${n === 1 ? "matches" : "match"} this filter.` }: {
  filter: Filter
  actions: ReadonlyArray<Kind>
  onDone: () => void
  /** The sentence stating the count. */
  describe?: (count: number) => string
}) => {
  const key = JSON.stringify(filter)
  /** A cancel takes a filter (docs/bulk-actions.md): without one it is not offered. */
  const offered = actions.filter((kind) => kind !== "cancel" || Object.keys(filter).length > 0)
  /** Counted again after each action. */
  const [generation, setGeneration] = useState(0)
  const [count, setCount] = useState<number | undefined>(undefined)
  const [selected, setSelected] = useState(false)
  const [confirming, setConfirming] = useState<{ readonly kind: Kind; readonly count: number } | undefined>(undefined)
  const [replayUrl, setReplayUrl] = useState("")
  const [action, setAction] = useState<Action | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)

  useEffect(() => {
    setSelected(false)
    setConfirming(undefined)
    setCount(undefined)
    // the size of the set, whatever the action: a replay's dry run takes every filter; the empty one
    // is every dead letter there (docs/bulk-actions.md), so every trigger is those and the others
    const parts: ReadonlyArray<Filter> = Object.keys(filter).length === 0 ? [{ deadLetter: true }, { deadLetter: false }] : [filter]
    Promise.all(parts.map((part) => api<{ matched: number }>("POST", "/actions", { action: "replay", filter: part, dryRun: true })))
      .then((answers) => setCount(answers.reduce((sum, r) => sum + r.matched, 0)), (e) => setError(messageOf(e)))
  }, [key, generation])

  const ended = () => {
    onDone()
    setGeneration((n) => n + 1)
  }

  useEffect(() => {
    if (action === undefined || action.status !== "running") return
    const timer = setTimeout(() => {
      api<Action>("GET", `/actions/${action.id}`).then((next) => {
        setAction(next)
        if (next.status !== "running") ended()
      }, (e) => setError(messageOf(e)))
    }, PROGRESS_EVERY_MS)
    return () => clearTimeout(timer)
  }, [action])

  const ask = async (kind: Kind) => {
    setError(undefined)
    try {
      setConfirming({ kind, count: await dryRun(kind, filter) })
    } catch (e) {
      setError(messageOf(e))
    }
  }
  const start = async () => {
    if (confirming === undefined) return
    setError(undefined)
    try {
      const replay = confirming.kind === "replay" && replayUrl.trim() !== "" ? { replay: { url: replayUrl.trim() } } : {}
      const started = await api<Action>("POST", "/actions", { action: confirming.kind, filter: actionFilter(confirming.kind, filter), ...replay })
      setConfirming(undefined)
      setSelected(false)
      setAction(started)
      if (started.status !== "running") ended()
    } catch (e) {
      setError(messageOf(e))
    }
  }

  return html`<div class="card bulk-select">
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    <div class="bulk-select-line">
      <span class="bulk-count">${count === undefined ? "Counting…" : describe(count)}</span>
      ${selected
        ? html`<span class="strong">All ${plural(count ?? 0, "matching trigger")} selected.</span>
            ${offered.map((kind) => html`<button class=${kind === "cancel" ? "danger" : "primary"} disabled=${filter.deadLetter === false && kind === "replay"}
              onClick=${() => ask(kind)}>${WORDING[kind].button}</button>`)}
            ${offered.length < actions.length ? html`<span class="muted small no-cancel">Set a filter to cancel triggers.</span>` : null}
            <button class="link" onClick=${() => { setSelected(false); setConfirming(undefined) }}>Clear selection</button>`
        : html`<button disabled=${count === undefined || count === 0} onClick=${() => setSelected(true)}>
            ${count === 1 ? "Select the 1 that matches this filter" : `Select all ${count === undefined ? "" : count.toLocaleString("en")} that match this filter`}</button>`}
    </div>
    ${confirming === undefined ? null : html`<div class="bulk-confirm" role="dialog" aria-label="Confirm bulk action">
      <p class="strong">${confirming.kind === "cancel" ? "Cancel" : "Replay"} ${WORDING[confirming.kind].what(confirming.count)}?</p>
      <p class="muted small">${confirming.kind === "cancel"
        ? "Every cancellable one is cancelled (pending triggers, active generators); the others are left as they are. This cannot be undone."
        : "Each is sent again as a replay (a new attempt on the same trigger). The others among the matching triggers are left as they are."}</p>
      ${confirming.kind === "replay" ? html`<label>Send to another URL (optional, for this replay only)
        <input name="replayUrl" placeholder="https://new-target.example/hook" value=${replayUrl}
          onInput=${(e: Event) => setReplayUrl((e.target as HTMLInputElement).value)} /></label>` : null}
      <div class="form-actions">
        <button class=${confirming.kind === "cancel" ? "danger" : "primary"} disabled=${confirming.count === 0} onClick=${start}>
          ${confirming.kind === "cancel" ? "Cancel" : "Replay"} ${WORDING[confirming.kind].what(confirming.count)}</button>
        <button onClick=${() => setConfirming(undefined)}>Back</button>
      </div>
    </div>`}
    ${action === undefined ? null : html`<${Progress} action=${action} />`}
  </div>`
}
