// The log reads (SPEC "Logs and replay", DECISIONS "Trigger and generator views", "Executions"):
// pages of a project's triggers and executions, one trigger or execution, a trigger's attempts, as
// the views every front end answers. Scoped to the project: another project's ids are not found.
// A database that cannot be reached is ServiceUnavailable (store/unavailable.ts).
import * as Effect from "effect/Effect"
import { BadRequest, NotFound } from "../domain/errors.ts"
import { isUuid } from "../domain/ids.ts"
import type { TriggerFilter } from "../domain/triggerFilter.ts"
import { decodeCursor, encodeCursor, executionView, type ExecutionView, type TriggerRow, triggerView, type TriggerView } from "../domain/views.ts"
import { executionsGet, executionsLatestOfTriggers, executionsList, executionsListForTrigger } from "../store/executionReads.ts"
import { triggersGet, triggersList } from "../store/triggerReads.ts"
import { orUnavailable } from "../store/unavailable.ts"

export const EXECUTION_STATUSES = ["succeeded", "failed"] as const

const jobNotFound = () => Effect.fail(new NotFound("Job not found"))

/** The cursor's id; a cursor this service did not hand out is a 400. */
export const cursorId = (cursor: string | undefined) => {
  if (cursor === undefined) return Effect.succeed(undefined)
  const id = decodeCursor(cursor)
  return id === undefined ? Effect.fail(new BadRequest("cursor is invalid")) : Effect.succeed(id)
}

export const nextCursor = (page: { readonly more: boolean }, items: ReadonlyArray<{ readonly id: string }>) => {
  const last = items.at(-1)
  return page.more && last !== undefined ? encodeCursor(last.id) : null
}

/** The project's trigger row by id; 404 `Job not found` for malformed, unknown or foreign ids. */
export const findTrigger = (projectId: string, id: string) =>
  isUuid(id)
    ? Effect.flatMap(triggersGet({ projectId, id: id.toLowerCase() }), (row) => (row === undefined ? jobNotFound() : Effect.succeed(row)))
    : jobNotFound()

export interface JobFilters {
  /** Which triggers (domain/triggerFilter.ts: the filter of the bulk actions too). */
  readonly filter: TriggerFilter
  readonly limit: number
  readonly cursor?: string | undefined
}

/** A page of triggers, newest first. */
export const listJobs = (projectId: string, filters: JobFilters) => orUnavailable(jobsPage(projectId, filters))

/** The views of trigger rows, their outcomes read from the latest attempts of the completed ones. */
const viewsOf = Effect.fnUntraced(function*(projectId: string, rows: ReadonlyArray<TriggerRow>) {
  const completed = rows.filter((row) => row.status === "completed").map((row) => row.id)
  const latest = yield* executionsLatestOfTriggers({ projectId, triggerIds: completed })
  return rows.map((row) => triggerView(row, latest.get(row.id)))
})

const jobsPage = Effect.fnUntraced(function*(projectId: string, filters: JobFilters) {
  const olderThanId = yield* cursorId(filters.cursor)
  const page = yield* triggersList({ projectId, filter: filters.filter, limit: filters.limit, olderThanId })
  const jobs: ReadonlyArray<TriggerView> = yield* viewsOf(projectId, page.rows)
  return { jobs, nextCursor: nextCursor(page, jobs) }
})

export const getJob = (projectId: string, id: string) =>
  orUnavailable(Effect.flatMap(findTrigger(projectId, id), (row) => Effect.map(viewsOf(projectId, [row]), (views) => views[0]!)))

/** Every attempt of one trigger, oldest first. */
export const listJobExecutions = (projectId: string, id: string) => orUnavailable(jobExecutions(projectId, id))

const jobExecutions = Effect.fnUntraced(function*(projectId: string, id: string) {
  const trigger = yield* findTrigger(projectId, id)
  const rows = yield* executionsListForTrigger({ projectId, triggerId: trigger.id })
  return { executions: rows.map((row) => executionView(row)) }
})

export interface ExecutionFilters {
  readonly jobId?: string | undefined
  readonly customKey?: string | undefined
  readonly executionStatus?: (typeof EXECUTION_STATUSES)[number] | undefined
  readonly httpStatus?: number | undefined
  readonly deadLetterOnly?: boolean | undefined
  readonly limit: number
  readonly cursor?: string | undefined
}

/** A page of executions across triggers, newest first (dead letters carry their error fields). */
export const listExecutions = (projectId: string, filters: ExecutionFilters) => orUnavailable(executionsPage(projectId, filters))

const executionsPage = Effect.fnUntraced(function*(projectId: string, filters: ExecutionFilters) {
  if (filters.jobId !== undefined && !isUuid(filters.jobId)) return yield* Effect.fail(new BadRequest("jobId must be a UUID"))
  const olderThanId = yield* cursorId(filters.cursor)
  const { cursor: _, ...rest } = filters
  const page = yield* executionsList({ projectId, ...rest, jobId: filters.jobId?.toLowerCase(), olderThanId })
  const executions: ReadonlyArray<ExecutionView> = page.rows.map((row) =>
    executionView(row, { alwaysWithErrorFields: filters.deadLetterOnly === true }))
  return { executions, nextCursor: nextCursor(page, executions) }
})

export const getExecution = (projectId: string, id: string) => orUnavailable(findExecution(projectId, id))

const findExecution = Effect.fnUntraced(function*(projectId: string, id: string) {
  const row = isUuid(id) ? yield* executionsGet({ projectId, id: id.toLowerCase() }) : undefined
  if (row === undefined) return yield* Effect.fail(new NotFound("Execution not found"))
  return executionView(row)
})
