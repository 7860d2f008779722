// The log and replay endpoints (SPEC "Logs and replay", DECISIONS "Trigger and generator views",
// "Executions"): list and get triggers, their executions, executions across triggers, and replay of
// a completed trigger. Key header, Bearer or dashboard session; everything is scoped to the
// caller's project, so another project's ids are simply not found.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { Dispatcher } from "../delivery/dispatch.ts"
import { isUuid } from "../domain/ids.ts"
import { NodeIdentity } from "../scheduler/node.ts"
import { executionsGet, executionsList, executionsListForTrigger } from "../store/executionReads.ts"
import { triggersGet, triggersList } from "../store/triggerReads.ts"
import { triggersQueueReplay } from "../store/triggerReplay.ts"
import { authenticate } from "./auth.ts"
import { BadRequest, Gone, jsonResponse, NotFound } from "./errors.ts"
import { handle } from "./handle.ts"
import { booleanParam, integerParam, oneOf, pageLimit, queryParams, type QueryParams, readJsonBody, requireExactPath } from "./requestParts.ts"
import { decodeCursor, encodeCursor, executionView, triggerView } from "./views.ts"

export const TRIGGER_STATUSES = ["registered", "skipped", "queued", "running", "retrying", "completed", "cancelled", "active"] as const
export const TRIGGER_KINDS = ["job", "generator"] as const
export const EXECUTION_STATUSES = ["succeeded", "failed"] as const

const JOBS = /^\/jobs$/
const JOB = /^\/jobs\/[^/]+$/
const JOB_EXECUTIONS = /^\/jobs\/[^/]+\/executions$/
const EXECUTIONS = /^\/executions$/
const EXECUTION = /^\/executions\/[^/]+$/

const jobNotFound = () => Effect.fail(new NotFound({ message: "Job not found" }))

/** The `id` path parameter. */
const pathId = Effect.map(HttpRouter.params, (params) => params["id"] ?? "")

/** The cursor's id; a cursor this service did not hand out is a 400. */
const cursorParam = (query: QueryParams) =>
  Effect.flatMap(query.get("cursor"), (raw) => {
    if (raw === undefined) return Effect.succeed(undefined)
    const id = decodeCursor(raw)
    return id === undefined ? Effect.fail(new BadRequest({ message: "cursor is invalid" })) : Effect.succeed(id)
  })

/** The project's trigger by id; 404 `Job not found` for malformed, unknown or foreign ids. */
const findTrigger = (projectId: string, id: string) =>
  isUuid(id)
    ? Effect.flatMap(triggersGet({ projectId, id: id.toLowerCase() }), (row) => (row === undefined ? jobNotFound() : Effect.succeed(row)))
    : jobNotFound()

const listJobs = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, JOBS)
  const { projectId } = yield* authenticate(request)
  const query = yield* queryParams
  const status = yield* oneOf(query, "status", TRIGGER_STATUSES)
  const kind = yield* oneOf(query, "kind", TRIGGER_KINDS)
  const tag = yield* query.get("tag")
  const customKey = yield* query.get("customKey")
  const limit = yield* pageLimit(query)
  const olderThanId = yield* cursorParam(query)
  const page = yield* triggersList({ projectId, status, kind, tag, customKey, limit, olderThanId })
  const jobs = page.rows.map(triggerView)
  const last = jobs.at(-1)
  return jsonResponse(200, { jobs, nextCursor: page.more && last !== undefined ? encodeCursor(last.id) : null })
})

const getJob = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, JOB)
  const { projectId } = yield* authenticate(request)
  const row = yield* findTrigger(projectId, yield* pathId)
  return jsonResponse(200, triggerView(row))
})

const listJobExecutions = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, JOB_EXECUTIONS)
  const { projectId } = yield* authenticate(request)
  const trigger = yield* findTrigger(projectId, yield* pathId)
  const rows = yield* executionsListForTrigger({ projectId, triggerId: trigger.id })
  return jsonResponse(200, { executions: rows.map((row) => executionView(row)) })
})

const notCompleted = (status: string) => Effect.fail(new Gone({ message: `Job is not completed (status=${status})` }))

/**
 * Replay: Content-Type and JSON first (415, empty 400), then credentials, then `triggeredBy`,
 * then the trigger (404, 410). The compare-and-set `completed` → `queued` (claimed by this node)
 * is one statement; the trigger is then handed to delivery in this process.
 */
const replayJob = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, JOB_EXECUTIONS)
  const body = yield* readJsonBody(request)
  const { projectId } = yield* authenticate(request)
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* Effect.fail(new BadRequest({ message: "Body must be a JSON object" }))
  }
  if ((body as Record<string, unknown>).triggeredBy !== "retry") {
    return yield* Effect.fail(new BadRequest({ message: `triggeredBy must be "retry"` }))
  }
  const trigger = yield* findTrigger(projectId, yield* pathId)
  if (trigger.kind !== "job" || trigger.status !== "completed") return yield* notCompleted(trigger.status)
  const nowMs = yield* Clock.currentTimeMillis
  const node = (yield* NodeIdentity).id
  const queued = yield* triggersQueueReplay({ projectId, id: trigger.id, node, nowMs })
  if (!queued) {
    // someone else changed it between the read and the compare-and-set (e.g. a concurrent replay)
    const now = yield* findTrigger(projectId, trigger.id)
    return yield* notCompleted(now.status)
  }
  const dispatcher = yield* Dispatcher
  yield* dispatcher.submit([trigger.id])
  return jsonResponse(202, { jobId: trigger.id, status: "queued" })
})

const listExecutions = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, EXECUTIONS)
  const { projectId } = yield* authenticate(request)
  const query = yield* queryParams
  const jobId = yield* query.get("jobId")
  if (jobId !== undefined && !isUuid(jobId)) return yield* Effect.fail(new BadRequest({ message: "jobId must be a UUID" }))
  const customKey = yield* query.get("customKey")
  const executionStatus = yield* oneOf(query, "executionStatus", EXECUTION_STATUSES)
  const httpStatus = yield* integerParam(query, "httpStatus", 100, 599)
  const deadLetterOnly = yield* booleanParam(query, "deadLetterOnly")
  const limit = yield* pageLimit(query)
  const olderThanId = yield* cursorParam(query)
  const page = yield* executionsList({
    projectId,
    jobId: jobId?.toLowerCase(),
    customKey,
    executionStatus,
    httpStatus,
    deadLetterOnly,
    limit,
    olderThanId
  })
  const executions = page.rows.map((row) => executionView(row, { alwaysWithErrorFields: deadLetterOnly === true }))
  const last = executions.at(-1)
  return jsonResponse(200, { executions, nextCursor: page.more && last !== undefined ? encodeCursor(last.id) : null })
})

const getExecution = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, EXECUTION)
  const { projectId } = yield* authenticate(request)
  const id = yield* pathId
  const row = isUuid(id) ? yield* executionsGet({ projectId, id: id.toLowerCase() }) : undefined
  if (row === undefined) return yield* Effect.fail(new NotFound({ message: "Execution not found" }))
  return jsonResponse(200, executionView(row))
})

export const LogRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/jobs", handle(listJobs))
  yield* router.add("GET", "/jobs/:id", handle(getJob))
  yield* router.add("GET", "/jobs/:id/executions", handle(listJobExecutions))
  yield* router.add("POST", "/jobs/:id/executions", handle(replayJob))
  yield* router.add("GET", "/executions", handle(listExecutions))
  yield* router.add("GET", "/executions/:id", handle(getExecution))
}))
