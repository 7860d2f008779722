// The completer: turns each delivery outcome into an execution record and a next state
// (`completionOf`, under the policy that applies), and records them in batches of up to 1,000 (a
// small one waits 20 ms for more) — executions, the triggers' next states and the overview's counts
// in one statement (store/executions.ts executionsRecord), retried until the database takes them, never dropped. A
// recorded batch lets go of its triggers (the dispatcher no longer carries them), logs its dead
// letters and wakes the shards of retries due soon.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import { Wakeups } from "../cluster/wakeups.ts"
import { refusalRetryAfterMs } from "../domain/gates/gateHold.ts"
import { type AttemptResult, decideOutcome, effectivePolicy, type Outcome, projectPolicyFromStored, type RetryPolicy } from "../domain/retry.ts"
import type { DeliveryRow } from "../domain/trigger.ts"
import { forkLoop, retryUntilDone } from "../lib/backgroundLoop.ts"
import type { ExecutionRecord, executionsRecord, TriggerOutcome } from "../store/executions.ts"
import type { RecordingSpan } from "./attemptTracing.ts"
import type { DeliveryOutcome } from "./executor.ts"

const COMPLETE_BATCH = 1_000
/**
 * A batch smaller than this waits LINGER_MS for more outcomes before it is recorded: at a steady
 * rate each outcome would otherwise be a statement and a WAL flush of its own (at 200 deliveries/s,
 * most of the service's and PostgreSQL's CPU per delivery). Gated outcomes are recorded at once.
 */
const LINGER_BELOW = 64
const LINGER_MS = 20

/** An outcome ready to record: the attempt's execution and the trigger's next state. */
export interface Completion {
  readonly row: DeliveryRow
  readonly execution: ExecutionRecord
  readonly outcome: TriggerOutcome
  /** The span of recording it (tracing on), ended once its batch is committed. */
  readonly recording?: RecordingSpan
}

const attemptResult = (outcome: DeliveryOutcome): AttemptResult =>
  outcome.errorKind !== null
    ? { _tag: "NoResponse", errorKind: outcome.errorKind }
    : { _tag: "Response", httpStatus: outcome.httpStatus ?? 0 }

const SUCCEEDED: Outcome = { _tag: "Succeeded" }

/**
 * What follows the attempt under the policy that applies (per-trigger, else its tags' (`tagRetry`),
 * else the project's: docs/retries.md "Which policy applies"). A 2xx succeeds under any policy:
 * no policy is read for it (most attempts).
 */
const decisionOf = (row: DeliveryRow, tagRetry: ReadonlyArray<RetryPolicy>, outcome: DeliveryOutcome, random: number): Outcome => {
  if (outcome.errorKind === null && outcome.httpStatus !== null && outcome.httpStatus >= 200 && outcome.httpStatus <= 299) {
    return SUCCEEDED
  }
  const policy = effectivePolicy({
    trigger: row.retry as RetryPolicy | null,
    tagPolicies: tagRetry,
    project: projectPolicyFromStored(row.projectRetry)
  })
  return decideOutcome({ policy, attempt: row.attempt, result: attemptResult(outcome), random })
}

/**
 * The single place that turns one delivery outcome into an execution record and a next state, under
 * the policy that applies (`decisionOf`). `random` draws the retry's jitter; `id` is the execution's.
 */
export const completionOf = (
  row: DeliveryRow,
  tagRetry: ReadonlyArray<RetryPolicy>,
  outcome: DeliveryOutcome,
  random: number,
  id: string
): Completion => {
  const decision = decisionOf(row, tagRetry, outcome, random)
  return {
    row,
    execution: {
      id,
      triggerId: row.id,
      projectId: row.projectId,
      attempt: row.attempt,
      succeeded: decision._tag === "Succeeded",
      startedAtMs: outcome.startedAtMs,
      finishedAtMs: outcome.finishedAtMs,
      durationMs: outcome.durationMs,
      httpStatus: outcome.httpStatus,
      responseHeaders: outcome.responseHeaders,
      responseBody: outcome.responseBody,
      errorKind: outcome.errorKind,
      errorCode: outcome.errorCode,
      errorMessage: outcome.errorMessage,
      isDeadLetter: decision._tag === "DeadLetter",
      connectTimeoutSeconds: outcome.connectTimeoutSeconds,
      timeoutSeconds: outcome.timeoutSeconds,
      triggeredBy: row.triggeredBy,
      url: row.url,
      scheduledAtMs: row.scheduledAtMs,
      gated: row.gateTags.length > 0
    },
    outcome: {
      id: row.id,
      attempt: row.attempt,
      firedSeenUs: row.fired?.seenUs ?? null,
      // a refusal's retry waits at least until its Retry-After (docs/retries.md "A retry policy")
      retryAtMs: decision._tag === "RetryAt"
        ? Math.max(outcome.finishedAtMs + decision.delayMs, refusalRetryAfterMs(outcome, outcome.finishedAtMs) ?? -Infinity)
        : null
    }
  }
}

/** One line per dead letter, once recorded (with LOG_FORMAT=json: `event` `dead_letter` and the attempt's fields). */
const logDeadLetter = (execution: ExecutionRecord) =>
  Effect.logWarning(
    `trigger ${execution.triggerId} dead-lettered after attempt ${execution.attempt}: ` +
      (execution.errorKind === null ? `HTTP ${execution.httpStatus}` : `${execution.errorKind} (${execution.errorCode ?? "no code"})`)
  ).pipe(Effect.annotateLogs({
    event: "dead_letter",
    triggerId: execution.triggerId,
    projectId: execution.projectId,
    attempt: execution.attempt,
    httpStatus: execution.httpStatus,
    errorKind: execution.errorKind
  }))

/** What records a batch (store/executions.ts executionsRecord, its database provided); how many outcomes it recorded. */
export type RecordBatch = (input: Parameters<typeof executionsRecord>[0]) => Effect.Effect<number, unknown>

/**
 * Starts the completer in the current scope: `offer` queues a completion, `unrecorded` counts those
 * not yet recorded (a drain waits for 0), and `recorded` hears each batch once it is recorded.
 */
export const makeCompleter = Effect.fnUntraced(function*(options: {
  readonly node: string
  readonly record: RecordBatch
  readonly recorded: (batch: ReadonlyArray<Completion>) => void
}) {
  const record = options.record
  const wakeups = yield* Wakeups
  const completions = yield* Queue.unbounded<Completion>()
  let unrecorded = 0

  const turn = Effect.gen(function*() {
    let batch = yield* Queue.takeBetween(completions, 1, COMPLETE_BATCH)
    if (batch.length < LINGER_BELOW && batch.every((c) => c.row.gateTags.length === 0)) {
      yield* Effect.sleep(LINGER_MS)
      // what came meanwhile, without waiting (a take of at least one never waits once one is queued)
      if (Queue.sizeUnsafe(completions) > 0) batch = [...batch, ...yield* Queue.takeBetween(completions, 1, COMPLETE_BATCH - batch.length)]
    }
    const nowMs = yield* Clock.currentTimeMillis
    const recorded = yield* retryUntilDone(
      "recording executions",
      record({
        executions: batch.map((c) => c.execution),
        outcomes: batch.map((c) => c.outcome),
        gated: batch.filter((c) => c.row.gateTags.length > 0).map((c) => c.row.id),
        node: options.node,
        nowMs
      })
    )
    if (recorded < batch.length) {
      // recorded already (a retry after a lost answer), or taken over or recovered from this node
      // meanwhile, which logged those attempts as interrupted (store/executions.ts)
      yield* Effect.logInfo(`${batch.length - recorded} outcomes not recorded: their triggers' state had changed meanwhile`).pipe(
        Effect.annotateLogs({ event: "outcomes_dropped", outcomes: batch.length - recorded })
      )
    }
    unrecorded -= batch.length
    options.recorded(batch)
    for (const completion of batch) completion.recording?.recorded()
    for (const { execution } of batch) if (execution.isDeadLetter) yield* logDeadLetter(execution)
    yield* wakeups.wake(
      batch.flatMap((c) => c.outcome.retryAtMs === null ? [] : [{ shard: c.row.shard, id: c.outcome.id, dueAtMs: c.outcome.retryAtMs }])
    )
  })
  yield* forkLoop("completer", turn, { afterFailure: 0 })

  return {
    offer: (completion: Completion): void => {
      unrecorded++
      Queue.offerUnsafe(completions, completion)
    },
    unrecorded: (): number => unrecorded
  }
})
