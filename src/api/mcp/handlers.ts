// What each MCP tool does (docs/mcp.md): reads its JSON arguments the way the HTTP endpoint reads its
// request — the same decoders, checks and messages (domain/scheduleInput.ts for /schedule and
// /cancel, the item and tag-policy decoders, the log reads' parameter checks) — and calls the same
// command, for the project of the key that authenticated the request (McpCaller). Where an HTTP
// message names a header, the tool's names its argument. Results and errors are shaped by
// mcp/results.ts.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import { BulkCall, type BulkResult, bulkTriggers } from "../../commands/bulk.ts"
import { getBulkAction, startBulkAction } from "../../commands/bulkActions.ts"
import { cancelTrigger } from "../../commands/cancel.ts"
import { declareTriggers } from "../../commands/declare.ts"
import { getExecution, getJob, listExecutions, listJobs } from "../../commands/logs.ts"
import { getProjectRetryPolicy, patchProjectRetryPolicy } from "../../commands/projectRetryPolicy.ts"
import { replayTrigger } from "../../commands/replay.ts"
import { scheduleTrigger } from "../../commands/schedule.ts"
import { createTagPolicy, deleteTagPolicy, listTagPolicies, updateTagPolicy } from "../../commands/tagPolicies.ts"
import {
  createTargetPolicy, deleteTargetPolicy, listTargetPolicies, listTargets, updateTargetPolicy
} from "../../commands/targetPolicies.ts"
import { AppConfig } from "../../config.ts"
import { decodeBulkBody } from "../../domain/bulk.ts"
import { decodeActionBody } from "../../domain/bulkAction.ts"
import { nextFires, parseCronValue } from "../../domain/cron/index.ts"
import { BadRequest } from "../../domain/errors.ts"
import { HTTP_TOKEN } from "../../domain/httpHeaders.ts"
import { decodeDeclareBody, resolveRetry } from "../../domain/item.ts"
import { encodeItemBody } from "../../domain/itemBody.ts"
import { parseDateValue, skippedWarning } from "../../domain/scheduledAt.ts"
import { cancelTargetOf, checkScheduleTarget, scheduleCommandOf } from "../../domain/scheduleInput.ts"
import { unstorableCharacter, unstorableMessage } from "../../domain/storableText.ts"
import { decodeTagPolicyBody } from "../../domain/tagPolicy.ts"
import { decodeTargetPolicyBody } from "../../domain/targetPolicy.ts"
import { decodeTriggerFilter } from "../../domain/triggerFilter.ts"
import { withListedBody } from "../../domain/views.ts"
import { executionSummary, jobSummary, malformedArguments, toolCall } from "./results.ts"
import { McpCaller } from "./toolParts.ts"
import { MAX_CRON_NEXT_COUNT, type McpTools } from "./tools.ts"
import { integerInRange, pageLimitOf, textParam } from "../requestParts.ts"
import { forwardedHeaders, storesBody } from "../scheduleRequest.ts"

/** The services the commands need, captured when the handlers are built (request services come per call). */
type CommandServices =
  | Effect.Services<ReturnType<typeof scheduleTrigger>>
  | Effect.Services<ReturnType<typeof cancelTrigger>>
  | Effect.Services<ReturnType<typeof declareTriggers>>
  | Effect.Services<ReturnType<typeof bulkTriggers>>
  | Effect.Services<ReturnType<typeof listJobs>>
  | Effect.Services<ReturnType<typeof getJob>>
  | Effect.Services<ReturnType<typeof listExecutions>>
  | Effect.Services<ReturnType<typeof getExecution>>
  | Effect.Services<ReturnType<typeof replayTrigger>>
  | Effect.Services<ReturnType<typeof startBulkAction>>
  | Effect.Services<ReturnType<typeof getBulkAction>>
  | Effect.Services<ReturnType<typeof listTagPolicies>>
  | Effect.Services<ReturnType<typeof createTagPolicy>>
  | Effect.Services<ReturnType<typeof updateTagPolicy>>
  | Effect.Services<ReturnType<typeof deleteTagPolicy>>
  | Effect.Services<ReturnType<typeof listTargetPolicies>>
  | Effect.Services<ReturnType<typeof createTargetPolicy>>
  | Effect.Services<ReturnType<typeof updateTargetPolicy>>
  | Effect.Services<ReturnType<typeof deleteTargetPolicy>>
  | Effect.Services<ReturnType<typeof listTargets>>
  | Effect.Services<ReturnType<typeof getProjectRetryPolicy>>
  | Effect.Services<ReturnType<typeof patchProjectRetryPolicy>>

const bad = (message: string) => Effect.fail(new BadRequest(message))

const DEFAULT_METHOD = "POST"
const DEFAULT_CRON_NEXT_COUNT = 5

/**
 * schedule_trigger's last check (what Node's HTTP parser guarantees for /schedule): the method and
 * header names are tokens, header values have no line break, and no text holds a character
 * PostgreSQL cannot store.
 */
const unstorableArgument = (args: {
  readonly method: string
  readonly url: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly title?: string | undefined
  readonly customKey?: string | undefined
  readonly triggerId?: string | undefined
}): string | undefined => {
  if (!HTTP_TOKEN.test(args.method)) return `Invalid method: ${args.method}`
  for (const [name, value] of args.headers) {
    if (!HTTP_TOKEN.test(name)) return `Invalid header name: ${name}`
    if (/[\r\n]/.test(value)) return `Invalid value of header ${name}: line breaks are not allowed`
  }
  const texts: ReadonlyArray<readonly [string, string | undefined]> = [
    ["url", args.url],
    ...args.headers.flatMap(([name, value]) => [[`header ${name.toLowerCase()}`, name], [`header ${name.toLowerCase()}`, value]] as const),
    ["title", args.title],
    ["customKey", args.customKey],
    ["triggerId", args.triggerId]
  ]
  for (const [field, text] of texts) {
    const character = text === undefined ? undefined : unstorableCharacter(text)
    if (character !== undefined) return unstorableMessage(field, character)
  }
  return undefined
}

export const mcpHandlers = (tools: McpTools) =>
  tools.toLayer(Effect.gen(function*() {
    const { prefix } = yield* AppConfig
    // the handlers run in each request's fiber: the layer's own scope must not be handed to them
    const services = Context.omit(Scope.Scope)(yield* Effect.context<CommandServices>())
    const call = <A, E, R>(effect: Effect.Effect<A, E, R>) => toolCall(Effect.provideContext(effect, services))
    const caller = Effect.map(McpCaller, (caller) => caller.projectId)
    /** cancel_by_filter and replay_by_filter: POST /actions' body decoder and command. */
    const bulkAction = (body: Record<string, unknown>) =>
      call(Effect.gen(function*() {
        const projectId = yield* caller
        const decoded = decodeActionBody(body, prefix)
        if (decoded._tag === "Err") return yield* bad(decoded.message)
        const answer = yield* startBulkAction(projectId, decoded.request, yield* Clock.currentTimeMillis)
        return answer._tag === "DryRun" ? { matched: answer.matched } : answer.action
      }))

    return tools.of({
      schedule_trigger: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const nowMs = yield* Clock.currentTimeMillis
          const target = checkScheduleTarget(args.url, args.tags ?? [])
          if (target._tag === "Err") return yield* bad(target.message)
          const method = (args.method ?? DEFAULT_METHOD).toUpperCase()
          const sent = Object.entries(args.headers ?? {})
          const contentType = sent.find(([name]) => name.toLowerCase() === "content-type")?.[1] ?? null
          const command = scheduleCommandOf({
            projectId,
            target: target.value,
            scheduledAt: args.scheduledAt,
            retry: () => {
              if (args.retry === undefined) return { _tag: "Ok", value: null }
              const retry = resolveRetry(args.retry)
              return retry._tag === "Ok" ? { _tag: "Ok", value: retry.policy } : { _tag: "Err", message: retry.message }
            },
            title: args.title,
            titleName: "title",
            customKeyName: "customKey",
            runMissed: () => ({ _tag: "Ok", value: args.runMissed ?? false }),
            customKey: args.customKey,
            triggerId: args.triggerId,
            unstorable: () => unstorableArgument({ ...args, method, headers: sent }),
            method,
            headers: forwardedHeaders(sent.flat(), prefix),
            body: storesBody(method) ? encodeItemBody(args.body) : null,
            contentType
          }, nowMs)
          if (command._tag === "Err") return yield* bad(command.message)
          const result = yield* scheduleTrigger(command.value, nowMs)
          return result.status === "skipped"
            ? { ...result, warning: skippedWarning(args.scheduledAt, Date.parse(result.scheduledAt), "runMissed") }
            : result
        })),

      cancel_trigger: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const target = cancelTargetOf(args.triggerId, args.customKey, { id: "triggerId", customKey: "customKey", noun: "argument" })
          if (target._tag === "Err") return yield* bad(target.message)
          yield* cancelTrigger(projectId, target.value, yield* Clock.currentTimeMillis)
          return target.value._tag === "Id"
            ? { cancelled: true, triggerId: target.value.id }
            : { cancelled: true, customKey: target.value.customKey }
        })),

      declare_triggers: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const body = decodeDeclareBody(args)
          if (body._tag === "Shape") return yield* Effect.fail(malformedArguments(body.reason))
          return yield* declareTriggers(projectId, body.value, yield* Clock.currentTimeMillis)
        })),

      bulk_triggers: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const body = decodeBulkBody(args)
          if (body._tag === "Shape") return yield* Effect.fail(malformedArguments(body.reason))
          const bulkCall = BulkCall.ofValue(body.value, yield* Clock.currentTimeMillis)
          return JSON.parse(yield* bulkTriggers(projectId, bulkCall)) as BulkResult
        })),

      list_jobs: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const filter = decodeTriggerFilter(args, "json")
          if (filter._tag === "Err") return yield* bad(filter.message)
          const page = yield* listJobs(projectId, {
            filter: filter.filter,
            limit: yield* pageLimitOf(args.limit),
            cursor: yield* textParam("cursor", args.cursor)
          })
          return { jobs: page.jobs.map(jobSummary), nextCursor: page.nextCursor }
        })),

      // a body whose value would take over 64 KiB is left out as in lists: a model has no use for it whole
      get_job: (args) => call(Effect.map(Effect.flatMap(caller, (projectId) => getJob(projectId, args.id)), withListedBody)),

      list_executions: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const page = yield* listExecutions(projectId, {
            jobId: yield* textParam("jobId", args.jobId),
            customKey: yield* textParam("customKey", args.customKey),
            executionStatus: args.executionStatus,
            httpStatus: yield* integerInRange("httpStatus", args.httpStatus, 100, 599),
            deadLetterOnly: args.deadLetterOnly,
            limit: yield* pageLimitOf(args.limit),
            cursor: yield* textParam("cursor", args.cursor)
          })
          return { executions: page.executions.map(executionSummary), nextCursor: page.nextCursor }
        })),

      get_execution: (args) => call(Effect.flatMap(caller, (projectId) => getExecution(projectId, args.id))),

      replay_job: (args) => call(Effect.flatMap(caller, (projectId) => replayTrigger(projectId, args.id))),

      list_tag_policies: () =>
        call(Effect.map(Effect.flatMap(caller, listTagPolicies), (policies) => ({ policies }))),

      create_tag_policy: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const body = decodeTagPolicyBody(args, "create")
          if (body._tag === "Shape") return yield* Effect.fail(malformedArguments(body.reason))
          return yield* createTagPolicy(projectId, body.body)
        })),

      update_tag_policy: ({ id, ...fields }) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const body = decodeTagPolicyBody(fields, "update")
          if (body._tag === "Shape") return yield* Effect.fail(malformedArguments(body.reason))
          return yield* updateTagPolicy(projectId, id, body.body)
        })),

      delete_tag_policy: (args) =>
        call(Effect.gen(function*() {
          yield* deleteTagPolicy(yield* caller, args.id)
          return { deleted: true, id: args.id }
        })),

      list_target_policies: () =>
        call(Effect.map(Effect.flatMap(caller, listTargetPolicies), (policies) => ({ policies }))),

      create_target_policy: (args) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const body = decodeTargetPolicyBody(args, "create")
          if (body._tag === "Shape") return yield* Effect.fail(malformedArguments(body.reason))
          return yield* createTargetPolicy(projectId, body.body)
        })),

      update_target_policy: ({ id, ...fields }) =>
        call(Effect.gen(function*() {
          const projectId = yield* caller
          const body = decodeTargetPolicyBody(fields, "update")
          if (body._tag === "Shape") return yield* Effect.fail(malformedArguments(body.reason))
          return yield* updateTargetPolicy(projectId, id, body.body)
        })),

      delete_target_policy: (args) =>
        call(Effect.gen(function*() {
          yield* deleteTargetPolicy(yield* caller, args.id)
          return { deleted: true, id: args.id }
        })),

      list_targets: () => call(Effect.map(Effect.flatMap(caller, listTargets), (targets) => ({ targets }))),

      get_retry_policy: () => call(Effect.flatMap(caller, getProjectRetryPolicy)),

      update_retry_policy: (args) => call(Effect.flatMap(caller, (projectId) => patchProjectRetryPolicy(projectId, args))),

      cancel_by_filter: (args) => bulkAction({ action: "cancel", ...args }),

      replay_by_filter: ({ url, headers, ...args }) =>
        bulkAction({ action: "replay", ...args, ...(url === undefined && headers === undefined ? {} : { replay: { url, headers } }) }),

      get_action: (args) => call(Effect.flatMap(caller, (projectId) => getBulkAction(projectId, args.id))),

      cron_next: (args) =>
        toolCall(Effect.gen(function*() {
          const parsed = parseCronValue(args.value, args.generatorId === undefined ? undefined : { hashSeed: args.generatorId })
          if (parsed._tag === "Err") return yield* bad(parsed.message)
          const from = parseDateValue(args.from ?? "now", yield* Clock.currentTimeMillis)
          if (from._tag === "Err") return yield* bad(from.message)
          const count = (yield* integerInRange("count", args.count, 1, MAX_CRON_NEXT_COUNT)) ?? DEFAULT_CRON_NEXT_COUNT
          return {
            expression: parsed.schedule.expression,
            timeZone: parsed.schedule.timeZone,
            times: nextFires(parsed.schedule, from.fireAtMs, count).map((ms) => new Date(ms).toISOString())
          }
        }))
    })
  }))
