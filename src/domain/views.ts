// The read views of the log endpoints (docs/reading.md "A trigger", "An execution"): the rows the store
// reads for them, pure mappings from those rows to the JSON every front end (HTTP API, MCP, dashboard)
// answers, and the opaque page cursor. Lists stay bounded by what they send (docs/reading.md "Large
// bodies in lists"): in a list a body whose value would take more than LIST_BODY_MAX_BYTES in the JSON
// (escapes or base64 counted) is listed as `{ encoding, value: null, size, truncated: true }` — one
// over LIST_BODY_MAX_BYTES stored is not even read (the store reads its size and a short prefix) — and
// a response body is cut to its first part that takes at most LIST_BODY_MAX_BYTES in the JSON. Times
// are ISO 8601 UTC with milliseconds; cron expression and time zone are never part of a view.
import { isUuid } from "./ids.ts"
import { jsonTextBytes, jsonTextPrefix } from "./jsonSize.ts"
import type { BodyView, ExecutionView, RetryView, TriggerView } from "./responses.ts"
import type { RetryPolicy } from "./retry.ts"
import { type LatestAttempt, outcomeOf, type TriggerKind } from "./trigger.ts"

/** A trigger or generator as the read endpoints select it (column names). */
export interface TriggerRow {
  readonly id: string
  readonly kind: TriggerKind
  readonly generator_id: string | null
  readonly status: string
  readonly scheduled_at: Date | null
  /** For a generator: scheduled_at of its upcoming (registered) instance; null otherwise. */
  readonly upcoming_at: Date | null
  readonly url: string
  readonly method: string
  readonly headers: unknown
  /** The whole body, or (a list's truncated body) its first ENCODING_PROBE_BYTES bytes. */
  readonly body: Uint8Array | null
  /** The stored body's size in bytes (null without a body). */
  readonly body_size: number | null
  /** The body was over LIST_BODY_MAX_BYTES in a list: `body` is only its prefix. */
  readonly body_truncated: boolean
  readonly content_type: string | null
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly custom_key: string | null
  readonly retry: unknown
  readonly attempts: number
  readonly created_at: Date
  readonly updated_at: Date
}

/** An execution as the read endpoints select it (column names). */
export interface ExecutionRow {
  readonly id: string
  readonly trigger_id: string
  readonly attempt: number
  readonly status: "succeeded" | "failed"
  readonly started_at: Date
  readonly finished_at: Date
  readonly duration_ms: number
  readonly http_status: number | null
  readonly response_headers: unknown
  readonly response_body: string | null
  readonly error_kind: string | null
  readonly error_code: string | null
  readonly error_message: string | null
  readonly is_dead_letter: boolean
  readonly connect_timeout_seconds: number
  readonly timeout_seconds: number
  readonly triggered_by: string | null
  readonly url: string
}

/**
 * In a list, a body whose value takes more than this in the JSON is not listed (docs/reading.md "Large
 * bodies in lists": 64 KiB), and a response body is cut to its first part that takes at most this.
 */
export const LIST_BODY_MAX_BYTES = 64 * 1024
/** What a list reads of a body it does not list: enough to tell text (UTF-8) from binary. */
export const ENCODING_PROBE_BYTES = 4 * 1024

export type { BodyView, ExecutionView, RetryView, TriggerView } from "./responses.ts"

const iso = (date: Date): string => date.toISOString()
const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString())

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** Text when the bytes are valid UTF-8, else base64; with the size in bytes. */
export const bodyView = (body: Uint8Array | null): BodyView | null => {
  if (body === null) return null
  const size = body.byteLength
  try {
    return { encoding: "text", value: strictUtf8.decode(body), size }
  } catch {
    return { encoding: "base64", value: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("base64"), size }
  }
}

/**
 * The encoding of a body left out of a list, told from its prefix: text when the prefix is valid
 * UTF-8 (a multi-byte character cut at its end allowed). A body whose first invalid byte lies beyond
 * the prefix is listed as text while GET /jobs/{id} answers it as base64.
 */
export const prefixEncoding = (prefix: Uint8Array): BodyView["encoding"] => {
  try {
    new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(prefix, { stream: true })
    return "text"
  } catch {
    return "base64"
  }
}

/** A row's body as a view: whole, or left out with its size when the list truncated it. */
const rowBodyView = (row: TriggerRow): BodyView | null =>
  row.body === null ? null
  : row.body_truncated ? { encoding: prefixEncoding(row.body), value: null, size: Number(row.body_size), truncated: true }
  : bodyView(row.body)

/**
 * Stored `[[name, value], …]` pairs as one object. Header names are case-insensitive, so a name
 * repeated in any spelling is one entry (under its first spelling) with the values joined by ", ".
 */
export const headersView = (pairs: unknown): Record<string, string> => {
  const out: Record<string, string> = {}
  const spelling = new Map<string, string>()
  if (!Array.isArray(pairs)) return out
  for (const pair of pairs) {
    if (!Array.isArray(pair) || typeof pair[0] !== "string") continue
    const [name, value] = pair as [string, unknown]
    const text = typeof value === "string" ? value : String(value)
    const key = spelling.get(name.toLowerCase())
    if (key === undefined) {
      spelling.set(name.toLowerCase(), name)
      out[name] = text
    } else {
      out[key] = `${out[key]}, ${text}`
    }
  }
  return out
}

/** The per-trigger policy (stored as the service wrote it: a RetryPolicy) with exactly its six fields, in a stable order. */
const retryView = (retry: unknown): RetryView | null => {
  if (typeof retry !== "object" || retry === null) return null
  const r = retry as RetryPolicy
  return {
    strategy: r.strategy,
    maxAttempts: r.maxAttempts ?? null,
    initialDelaySeconds: r.initialDelaySeconds,
    maxDelaySeconds: r.maxDelaySeconds ?? null,
    jitter: r.jitter,
    retryOn: r.retryOn
  }
}

/** A trigger as the read endpoints answer it; `latest` is its latest attempt (needed when it is completed). */
export const triggerView = (row: TriggerRow, latest?: LatestAttempt): TriggerView => ({
  id: row.id,
  kind: row.kind,
  status: row.status,
  outcome: outcomeOf(row.status, latest),
  scheduledAt: isoOrNull(row.kind === "generator" ? row.upcoming_at : row.scheduled_at),
  url: row.url,
  method: row.method,
  headers: headersView(row.headers),
  body: rowBodyView(row),
  contentType: row.content_type,
  title: row.title,
  tags: [...row.tags],
  customKey: row.custom_key,
  retry: retryView(row.retry),
  generatorId: row.generator_id,
  attempts: row.attempts,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at)
})

/** The bytes a body's value takes in the JSON: its escaped text, or its base64. */
const valueBytes = (body: BodyView): number =>
  body.value === null ? 0 : body.encoding === "text" ? jsonTextBytes(body.value) : body.value.length

/** A trigger's view with its body left out (with its size) when its value would take over LIST_BODY_MAX_BYTES. */
export const withListedBody = (view: TriggerView): TriggerView => {
  const body = view.body
  return body !== null && body.truncated !== true && valueBytes(body) > LIST_BODY_MAX_BYTES
    ? { ...view, body: { encoding: body.encoding, value: null, size: body.size, truncated: true } }
    : view
}

/** A trigger in a list: withListedBody. */
export const listedTriggerView = (row: TriggerRow): TriggerView => withListedBody(triggerView(row))

/**
 * `errorKind`, `errorCode`, `errorMessage` are omitted when null. A dead-letter listing
 * (`alwaysWithErrorFields`) always carries `errorKind` and `errorCode` (null when the attempt got
 * a response): docs/reading.md lists them on every entry of `deadLetterOnly=true`.
 */
export const executionView = (row: ExecutionRow, options: { readonly alwaysWithErrorFields?: boolean } = {}): ExecutionView => {
  const always = options.alwaysWithErrorFields === true
  return {
    id: row.id,
    jobId: row.trigger_id,
    attempt: row.attempt,
    status: row.status,
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    durationMs: row.duration_ms,
    httpStatus: row.http_status,
    responseHeaders: (row.response_headers ?? null) as Record<string, string> | null,
    responseBody: row.response_body,
    ...(row.error_kind !== null || always ? { errorKind: row.error_kind } : {}),
    ...(row.error_code !== null || always ? { errorCode: row.error_code } : {}),
    ...(row.error_message !== null ? { errorMessage: row.error_message } : {}),
    isDeadLetter: row.is_dead_letter,
    connectTimeoutSeconds: row.connect_timeout_seconds,
    timeoutSeconds: row.timeout_seconds,
    triggeredBy: row.triggered_by,
    url: row.url
  }
}

/** An execution in a list: its response body cut to its first part taking at most LIST_BODY_MAX_BYTES in the JSON. */
export const listedExecutionView = (row: ExecutionRow, options: { readonly alwaysWithErrorFields?: boolean } = {}): ExecutionView => {
  const view = executionView(row, options)
  return view.responseBody === null ? view : { ...view, responseBody: jsonTextPrefix(view.responseBody, LIST_BODY_MAX_BYTES).text }
}

/** The opaque cursor of the next page: the last id of this page, base64url. */
export const encodeCursor = (lastId: string): string => Buffer.from(lastId, "utf8").toString("base64url")

/** The id inside a cursor, or undefined when it is not one this service handed out. */
export const decodeCursor = (cursor: string): string | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined
  const id = Buffer.from(cursor, "base64url").toString("utf8")
  return isUuid(id) ? id.toLowerCase() : undefined
}
