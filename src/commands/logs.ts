// The log reads (docs/reading.md "A trigger", "An execution", "Paging"):
// pages of a project's triggers and executions, one trigger or execution, a trigger's attempts, as
// the views every front end answers. Scoped to the project: another project's ids are not found.
// A database that cannot be reached is ServiceUnavailable (store/unavailable.ts).
// Pages are bounded by what they send (domain/listPage.ts); a trigger's attempts, which have no
// pages, come as a stream read a page at a time, so that a node never holds them all at once.
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { BadRequest, NotFound } from "../domain/errors.ts"
import { isUuid } from "../domain/ids.ts"
import { emptyPage, type Page, takePage } from "../domain/listPage.ts"
import { type LatestAttempt, outcomeOf } from "../domain/trigger.ts"
import type { TriggerFilter } from "../domain/triggerFilter.ts"
import {
  decodeCursor, encodeCursor, executionView, type ExecutionView, listedExecutionView, listedTriggerView, triggerView, type TriggerView
} from "../domain/views.ts"
import {
  type AttemptPosition, executionsGet, executionsLatestOfTriggers, executionsList, executionsListForTrigger, type ListedExecutionRow
} from "../store/executionReads.ts"
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

/**
 * A page of a list, read with `read` (rows older than an id, at most a number of them plus one that
 * tells whether more follow): read again after its last entry while the store stopped at its byte
 * budget and the page has room left (each read takes at least one row, so this ends).
 */
const readPage = <Row extends { readonly fetched: boolean }, View extends { readonly id: string }, E, R>(
  read: (olderThanId: string | undefined, limit: number) => Effect.Effect<ReadonlyArray<Row>, E, R>,
  options: { readonly olderThanId: string | undefined; readonly limit: number; readonly view: (row: NoInfer<Row>) => View }
) =>
  Effect.gen(function*() {
    let page: Page<View> = emptyPage
    do {
      const rows = yield* read(page.views.at(-1)?.id ?? options.olderThanId, options.limit - page.views.length)
      page = takePage(rows, { limit: options.limit, fetched: (row) => row.fetched, view: options.view }, page)
    } while (page.unread)
    return page
  })

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

/** The views with the outcomes of the completed ones, read from their latest attempts. */
const withOutcomes = Effect.fnUntraced(function*(projectId: string, views: ReadonlyArray<TriggerView>) {
  const completed = views.filter((view) => view.status === "completed").map((view) => view.id)
  if (completed.length === 0) return views
  const latest: ReadonlyMap<string, LatestAttempt> = yield* executionsLatestOfTriggers({ projectId, triggerIds: completed })
  return views.map((view) => (view.status === "completed" ? { ...view, outcome: outcomeOf(view.status, latest.get(view.id)) } : view))
})

const jobsPage = Effect.fnUntraced(function*(projectId: string, filters: JobFilters) {
  const olderThanId = yield* cursorId(filters.cursor)
  const page = yield* readPage((olderThan: string | undefined, limit: number) =>
    triggersList({ projectId, filter: filters.filter, olderThanId: olderThan, limit }), {
    olderThanId,
    limit: filters.limit,
    view: listedTriggerView
  })
  const jobs: ReadonlyArray<TriggerView> = yield* withOutcomes(projectId, page.views)
  return { jobs, nextCursor: nextCursor(page, jobs) }
})

export const getJob = (projectId: string, id: string) =>
  orUnavailable(Effect.flatMap(findTrigger(projectId, id), (row) => Effect.map(withOutcomes(projectId, [triggerView(row)]), (views) => views[0]!)))

/** How many of a trigger's attempts are read at once (at most about LIST_PAGE_MAX_BYTES of them). */
const ATTEMPTS_PER_READ = 100

/**
 * Every attempt of one trigger, oldest first, as a stream read ATTEMPTS_PER_READ at a time (each read
 * within the page budget, response bodies cut as in every list); 404 for an unknown trigger first.
 */
export const listJobExecutions = (projectId: string, id: string) => orUnavailable(jobExecutions(projectId, id))

const jobExecutions = Effect.fnUntraced(function*(projectId: string, id: string) {
  const trigger = yield* findTrigger(projectId, id)
  const services = yield* Effect.context<Effect.Services<ReturnType<typeof executionsListForTrigger>>>()
  const read = (after: AttemptPosition | undefined) =>
    Effect.map(executionsListForTrigger({ projectId, triggerId: trigger.id, after, limit: ATTEMPTS_PER_READ }), (rows) => {
      const page = takePage(rows, { limit: ATTEMPTS_PER_READ, fetched: (row) => row.fetched, view: (row) => row })
      const last: ListedExecutionRow | undefined = page.views.at(-1)
      const views: ReadonlyArray<ExecutionView> = page.views.map((row) => listedExecutionView(row))
      return [views, rows.length === ATTEMPTS_PER_READ || page.more ? Option.fromNullishOr(last) : Option.none()] as const
    })
  const executions = Stream.paginate(undefined as AttemptPosition | undefined, (after) => orUnavailable(read(after))).pipe(
    Stream.provideContext(services)
  )
  return { executions }
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
  const jobId = filters.jobId?.toLowerCase()
  const page = yield* readPage((olderThan: string | undefined, limit: number) => executionsList({ projectId, ...rest, jobId, olderThanId: olderThan, limit }), {
    olderThanId,
    limit: filters.limit,
    view: (row) => listedExecutionView(row, { alwaysWithErrorFields: filters.deadLetterOnly === true })
  })
  const executions: ReadonlyArray<ExecutionView> = page.views
  return { executions, nextCursor: nextCursor(page, executions) }
})

export const getExecution = (projectId: string, id: string) => orUnavailable(findExecution(projectId, id))

const findExecution = Effect.fnUntraced(function*(projectId: string, id: string) {
  const row = isUuid(id) ? yield* executionsGet({ projectId, id: id.toLowerCase() }) : undefined
  if (row === undefined) return yield* Effect.fail(new NotFound("Execution not found"))
  return executionView(row)
})
