// Bulk actions (docs/bulk-actions.md "The request"): the body of POST /actions (also the MCP tools'
// arguments) checked field by field with one message each, the action as every front end shows it,
// and why a trigger of the set was left untouched. Pure.
//   { "action": "cancel" | "replay", "filter": {…}, "dryRun"?: boolean, "replay"?: { "url"?, "headers"? } }
// Checks, in order: a JSON object with no other field (`Unknown field: x`), `action`, `filter`
// (domain/triggerFilter.ts), `dryRun`, `replay` (domain/replayOverride.ts, replay only), then a cancel
// with no filter field: `A cancel needs at least one filter field`. A replay with no filter field is
// every dead letter of the project: its filter is `{deadLetter: true}` (docs/bulk-actions.md).
import { decodeReplayOverride, isNoOverride, type ReplayOverride } from "./replayOverride.ts"
import { decodeFilterObject, isEmptyFilter, type TriggerFilter } from "./triggerFilter.ts"

export const BULK_ACTIONS = ["cancel", "replay"] as const
export type BulkActionKind = (typeof BULK_ACTIONS)[number]

export const ACTION_STATUSES = ["running", "completed", "failed"] as const
export type ActionStatus = (typeof ACTION_STATUSES)[number]

export interface BulkActionRequest {
  readonly action: BulkActionKind
  readonly filter: TriggerFilter
  readonly dryRun: boolean
  /** Replay only; null when nothing is overridden. */
  readonly replay: ReplayOverride | null
}

export type DecodedAction = { readonly _tag: "Ok"; readonly request: BulkActionRequest } | { readonly _tag: "Err"; readonly message: string }

const BODY_FIELDS = ["action", "filter", "dryRun", "replay"]

export const EMPTY_CANCEL_FILTER = "A cancel needs at least one filter field"

/** The body of POST /actions; `prefix` (ttr) names the headers a replay may not add. */
export const decodeActionBody = (json: unknown, prefix: string): DecodedAction => {
  const err = (message: string): DecodedAction => ({ _tag: "Err", message })
  if (typeof json !== "object" || json === null || Array.isArray(json)) return err("Body must be a JSON object")
  const body = json as Record<string, unknown>
  const unknown = Object.keys(body).find((key) => !BODY_FIELDS.includes(key))
  if (unknown !== undefined) return err(`Unknown field: ${unknown}`)
  if (!(BULK_ACTIONS as ReadonlyArray<unknown>).includes(body.action)) return err(`action must be "cancel" or "replay"`)
  const action = body.action as BulkActionKind
  if (body.filter === undefined) return err("filter must be a JSON object")
  const filter = decodeFilterObject(body.filter)
  if (filter._tag === "Err") return err(filter.message)
  if (body.dryRun !== undefined && typeof body.dryRun !== "boolean") return err("dryRun must be true or false")
  let replay: ReplayOverride | null = null
  if (body.replay !== undefined) {
    if (action !== "replay") return err(`replay is only for action "replay"`)
    const decoded = decodeReplayOverride(body.replay, prefix)
    if (decoded._tag === "Err") return err(decoded.message)
    replay = isNoOverride(decoded.override) ? null : decoded.override
  }
  if (action === "cancel" && isEmptyFilter(filter.filter)) return err(EMPTY_CANCEL_FILTER)
  const effective = action === "replay" && isEmptyFilter(filter.filter) ? { ...filter.filter, deadLetter: true } : filter.filter
  return { _tag: "Ok", request: { action, filter: effective, dryRun: body.dryRun === true, replay } }
}

/** Why a trigger of the set was left alone: its status (a cancel follows DELETE /cancel, a replay needs
 * `completed`), `notDeadLetter` (a completed trigger whose latest execution is not a dead letter: a
 * replay redrives dead letters only), or `deleted` (gone since the action started, e.g. by retention). */
export const untouchedReason = (action: BulkActionKind, status: string | undefined): string =>
  status === undefined ? "deleted" : action === "replay" && status === "completed" ? "notDeadLetter" : status

/** An action as the store reads it (column names). */
export interface BulkActionRow {
  readonly id: string
  readonly action: BulkActionKind
  readonly filter: Record<string, unknown>
  readonly status: ActionStatus
  readonly matched: number
  readonly processed: number
  readonly acted: number
  readonly untouched: Record<string, number>
  readonly created_at: Date
  readonly finished_at: Date | null
}

/** The action as the API answers it: `cancelled` or `replayed` after the action's name. */
export const actionView = (row: BulkActionRow) => ({
  id: row.id,
  action: row.action,
  filter: row.filter,
  status: row.status,
  matched: row.matched,
  processed: row.processed,
  [row.action === "cancel" ? "cancelled" : "replayed"]: row.acted,
  untouched: row.untouched,
  createdAt: row.created_at.toISOString(),
  finishedAt: row.finished_at === null ? null : row.finished_at.toISOString()
})

export type ActionView = ReturnType<typeof actionView>
