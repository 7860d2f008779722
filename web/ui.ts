// Small building blocks of the pages: htm bound to preact, links, status badges, time and number
// formats, a data loader hook with polling, and the message boxes that show the API's answers.
import { h } from "preact"
import htm from "htm"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { linkHandler } from "./router.ts"

export const html = htm.bind(h)

export const Link = ({ href, children, class: className }: { href: string; children?: unknown; class?: string }) =>
  html`<a href=${href} class=${className} onClick=${linkHandler}>${children}</a>`

const pad = (n: number) => String(n).padStart(2, "0")

/** `2026-11-24 06:30:12` in UTC (the service's times are UTC). */
export const formatTime = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return "—"
  const d = new Date(iso)
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
}

/** How long ago (or ahead), coarsely. */
export const relative = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return ""
  const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000)
  const abs = Math.abs(seconds)
  const text = abs < 60 ? `${abs} s` : abs < 3600 ? `${Math.round(abs / 60)} min` : abs < 86400 ? `${Math.round(abs / 3600)} h` : `${Math.round(abs / 86400)} d`
  return seconds <= 0 ? `${text} ago` : `in ${text}`
}

export const formatMs = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? "—" : ms === 0 ? "0 ms" : ms < 1000 ? `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60_000).toFixed(1)} min`

export const Time = ({ iso }: { iso: string | null | undefined }) =>
  html`<span class="time" title=${relative(iso)}>${formatTime(iso)}</span>`

/** A finished trigger's status is neutral: its outcome carries the colour (a dead letter is `completed` too). */
const STATUS_TONE: Record<string, string> = {
  registered: "blue", active: "blue", queued: "violet", running: "violet", retrying: "amber", completed: "grey",
  succeeded: "green", failed: "red", cancelled: "grey", skipped: "grey", "dead letter": "red", delivered: "green", revoked: "grey"
}

export const Badge = ({ text, tone }: { text: string; tone?: string }) =>
  html`<span class=${`badge ${tone ?? STATUS_TONE[text] ?? "grey"}`}>${text}</span>`

const OUTCOME_LABEL: Record<string, string> = { delivered: "delivered", dead_letter: "dead letter", cancelled: "cancelled", skipped: "skipped" }

/** A trigger's status, and beside it how it ended when that says more than the status (delivered or dead letter). */
export const StatusBadges = ({ status, outcome }: { status: string; outcome: string | null }) => {
  const label = outcome === null ? undefined : OUTCOME_LABEL[outcome]
  return html`<span class="status-badges" data-outcome=${outcome ?? ""}>
    <${Badge} text=${status} />${label === undefined || label === status ? null : html` <${Badge} text=${label} />`}
  </span>`
}

export const Notice = ({ kind, children }: { kind: "error" | "warn" | "ok" | "info"; children?: unknown }) =>
  html`<div class=${`notice ${kind}`} role=${kind === "error" ? "alert" : "status"}>${children}</div>`

export const Empty = ({ children }: { children?: unknown }) => html`<div class="empty">${children}</div>`

/** The message of a failed call (ApiError carries the API's own). */
export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: string | undefined
  readonly reload: () => Promise<void>
}

/** Loads `load()` when `deps` change, and again every `everyMs` when given (while the page shows). */
export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown>, everyMs?: number): Loaded<A> => {
  const [data, setData] = useState<A | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const latest = useRef(load)
  latest.current = load
  const reload = useCallback(async () => {
    try {
      setData(await latest.current())
      setError(undefined)
    } catch (e) {
      setError(messageOf(e))
    }
  }, [])
  useEffect(() => {
    setData(undefined)
    void reload()
    if (everyMs === undefined) return
    const timer = setInterval(() => void reload(), everyMs)
    return () => clearInterval(timer)
  }, deps)
  return { data, error, reload }
}

export const PageHeader = ({ title, subtitle, children }: { title: string; subtitle?: unknown; children?: unknown }) =>
  html`<header class="page-header">
    <div><h1>${title}</h1>${subtitle === undefined ? null : html`<p class="subtitle">${subtitle}</p>`}</div>
    <div class="actions">${children}</div>
  </header>`

export const shortId = (id: string) => id.slice(-12)
