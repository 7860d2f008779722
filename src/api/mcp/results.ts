// What the MCP tools answer (docs/mcp.md): compact JSON a model can use — lists carry ids, statuses and
// times and leave headers, bodies and responses to the get tools — and the API's errors as tool
// errors: a failed call is a tool result with `isError: true` whose text is `{"_tag","message"}`,
// the tag and message the HTTP endpoint would have answered. The API's empty-body 400 (a wrong
// shape) becomes a BadRequest with a message; anything unexpected is left to effect/ai, which logs it
// and answers its generic internal error.
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { BadRequest, isSpecFailure, type SpecFailure } from "../../domain/errors.ts"
import type { ExecutionView, TriggerView } from "../../domain/views.ts"

/**
 * A tool error: the API's `_tag` (BadRequest, Unauthorized, QuotaExceeded, NotFound, Gone, Conflict,
 * ServiceUnavailable, or any tag the domain adds later) and its message.
 */
export const ToolError = Schema.Struct({ _tag: Schema.String, message: Schema.String })
export type ToolError = typeof ToolError.Type

/** The API's empty 400 of a wrong shape, with the reason when there is one. */
export const malformedArguments = (reason?: string) =>
  new BadRequest(reason === undefined ? "Malformed arguments" : `Malformed arguments: ${reason}`)

export const toolError = (error: SpecFailure): ToolError =>
  error._tag === "MalformedRequest" ? { _tag: "BadRequest", message: malformedArguments(error.hint).message } : { _tag: error._tag, message: error.message }

/** A use case as a tool call: the API's failures become tool errors, anything else a defect. */
export const toolCall = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ToolError, R> =>
  Effect.catch(effect, (error) => (isSpecFailure(error) ? Effect.fail(toolError(error)) : Effect.die(error)))

/** A trigger or generator in a list: no headers, body or retry policy (get_job has them). */
export const jobSummary = (job: TriggerView) => ({
  id: job.id,
  kind: job.kind,
  status: job.status,
  outcome: job.outcome,
  scheduledAt: job.scheduledAt,
  method: job.method,
  url: job.url,
  customKey: job.customKey,
  title: job.title,
  tags: job.tags,
  generatorId: job.generatorId,
  attempts: job.attempts,
  createdAt: job.createdAt,
  updatedAt: job.updatedAt
})

/** An execution in a list: no response headers or body, no timeouts (get_execution has them). */
export const executionSummary = (execution: ExecutionView) => ({
  id: execution.id,
  jobId: execution.jobId,
  attempt: execution.attempt,
  status: execution.status,
  startedAt: execution.startedAt,
  finishedAt: execution.finishedAt,
  durationMs: execution.durationMs,
  httpStatus: execution.httpStatus,
  ...(execution.errorKind === undefined ? {} : { errorKind: execution.errorKind }),
  ...(execution.errorCode === undefined ? {} : { errorCode: execution.errorCode }),
  ...(execution.errorMessage === undefined ? {} : { errorMessage: execution.errorMessage }),
  isDeadLetter: execution.isDeadLetter,
  triggeredBy: execution.triggeredBy,
  url: execution.url
})
