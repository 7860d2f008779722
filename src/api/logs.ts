// The log and replay endpoints (docs/reading.md: "A trigger", "An execution", "Replay", "Errors"):
// the HTTP reading of commands/logs.ts and commands/replay.ts — exact paths, query
// parameters with one clear 400 per bad value, the body of a replay. Key header, Bearer or
// dashboard session; everything is scoped to the caller's project. The lists answer a query
// parameter they do not take as if it were absent, and name it in `Timewheel-Warning`
// (domain/unknownParameters.ts).
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { EXECUTION_STATUSES, getExecution, getJob, listExecutions, listJobExecutions, listJobs } from "../commands/logs.ts"
import { replayTrigger } from "../commands/replay.ts"
import { BadRequest } from "../domain/errors.ts"
import { decodeTriggerFilter, FILTER_FIELDS, type FilterField } from "../domain/triggerFilter.ts"
import { unknownParametersWarning } from "../domain/unknownParameters.ts"
import { authenticate } from "./auth.ts"
import { asciiLine, jsonResponse, WARNING_HEADER } from "./errors.ts"
import { handle } from "./handle.ts"
import { jsonArrayStream } from "./jsonStream.ts"
import {
  booleanParam, integerParam, oneOf, pageLimit, type QueryParams, queryParams, readJsonBody, requireExactPath
} from "./requestParts.ts"

const JOBS = /^\/jobs$/
const JOB = /^\/jobs\/[^/]+$/
const JOB_EXECUTIONS = /^\/jobs\/[^/]+\/executions$/
const EXECUTIONS = /^\/executions$/
const EXECUTION = /^\/executions\/[^/]+$/

/** The `id` path parameter. */
const pathId = Effect.map(HttpRouter.params, (params) => params["id"] ?? "")

/** The exact path, then the credentials: the caller's project. */
const authenticated = (path: RegExp) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, path)
    return (yield* authenticate(request)).projectId
  })

/** The query parameters of GET /jobs and GET /executions. */
const JOBS_PARAMETERS: ReadonlyArray<string> = [...FILTER_FIELDS, "limit", "cursor"]
const EXECUTIONS_PARAMETERS: ReadonlyArray<string> = ["jobId", "customKey", "executionStatus", "httpStatus", "deadLetterOnly", "limit", "cursor"]

/** A list's 200, with a `Timewheel-Warning` naming the query parameters it ignored. */
const listResponse = (endpoint: string, known: ReadonlyArray<string>, page: unknown) =>
  Effect.map(HttpServerRequest.ParsedSearchParams, (params) => {
    const warning = unknownParametersWarning(endpoint, Object.keys(params), known)
    const response = jsonResponse(200, page)
    return warning === undefined ? response : HttpServerResponse.setHeader(response, WARNING_HEADER, asciiLine(warning))
  })

/** The filter fields of GET /jobs (domain/triggerFilter.ts, read as query text). */
const jobFilter = (query: QueryParams) =>
  Effect.gen(function*() {
    const values: Partial<Record<FilterField, string>> = {}
    for (const field of FILTER_FIELDS) {
      const value = yield* query.get(field)
      if (value !== undefined) values[field] = value
    }
    const decoded = decodeTriggerFilter(values, "query")
    return decoded._tag === "Ok" ? decoded.filter : yield* Effect.fail(new BadRequest(decoded.message))
  })

const listJobsRoute = Effect.gen(function*() {
  const projectId = yield* authenticated(JOBS)
  const query = yield* queryParams
  const page = yield* listJobs(projectId, {
    filter: yield* jobFilter(query),
    limit: yield* pageLimit(query),
    cursor: yield* query.get("cursor")
  })
  return yield* listResponse("GET /jobs", JOBS_PARAMETERS, page)
})

const getJobRoute = Effect.gen(function*() {
  const projectId = yield* authenticated(JOB)
  return jsonResponse(200, yield* getJob(projectId, yield* pathId))
})

/** Written as it is read: a trigger's attempts have no pages, however many (docs/reading.md "Paging"). */
const listJobExecutionsRoute = Effect.gen(function*() {
  const projectId = yield* authenticated(JOB_EXECUTIONS)
  const { executions } = yield* listJobExecutions(projectId, yield* pathId)
  return jsonArrayStream("executions", executions)
})

/** Replay: Content-Type and JSON first (415, empty 400), then credentials, then `triggeredBy`, then the trigger (404, 410). */
const replayRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, JOB_EXECUTIONS)
  const body = yield* readJsonBody(request)
  const { projectId } = yield* authenticate(request)
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* Effect.fail(new BadRequest("Body must be a JSON object"))
  }
  if ((body as Record<string, unknown>).triggeredBy !== "retry") {
    return yield* Effect.fail(new BadRequest(`triggeredBy must be "retry"`))
  }
  return jsonResponse(202, yield* replayTrigger(projectId, yield* pathId))
})

const listExecutionsRoute = Effect.gen(function*() {
  const projectId = yield* authenticated(EXECUTIONS)
  const query = yield* queryParams
  const page = yield* listExecutions(projectId, {
    jobId: yield* query.get("jobId"),
    customKey: yield* query.get("customKey"),
    executionStatus: yield* oneOf(query, "executionStatus", EXECUTION_STATUSES),
    httpStatus: yield* integerParam(query, "httpStatus", 100, 599),
    deadLetterOnly: yield* booleanParam(query, "deadLetterOnly"),
    limit: yield* pageLimit(query),
    cursor: yield* query.get("cursor")
  })
  return yield* listResponse("GET /executions", EXECUTIONS_PARAMETERS, page)
})

const getExecutionRoute = Effect.gen(function*() {
  const projectId = yield* authenticated(EXECUTION)
  return jsonResponse(200, yield* getExecution(projectId, yield* pathId))
})

export const LogRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/jobs", handle(listJobsRoute))
  yield* router.add("GET", "/jobs/:id", handle(getJobRoute))
  yield* router.add("GET", "/jobs/:id/executions", handle(listJobExecutionsRoute))
  yield* router.add("POST", "/jobs/:id/executions", handle(replayRoute))
  yield* router.add("GET", "/executions", handle(listExecutionsRoute))
  yield* router.add("GET", "/executions/:id", handle(getExecutionRoute))
}))
