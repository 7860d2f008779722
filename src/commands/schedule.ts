// /schedule as one command: consume a quota unit, then in one transaction create or edit the
// trigger by custom key or id (docs/scheduling.md "Editing"), then wake the shard that owns it.
// This module handles one-shot values; scheduleGenerator.ts handles `cron(...)`. A plain create (no
// key, no id) is its row (`plainRow`) group-committed with its quota unit, then what the grant means
// (`plainOutcome`): the fast lane (api/fastLane.ts) runs the same two steps with a callback
// (`plainCreates`).
import * as Effect from "effect/Effect"
import { type WakeItem, Wakeups } from "../cluster/wakeups.ts"
import { SchedulerTiming } from "../config.ts"
import { Gone, NotFound, QuotaExceeded } from "../domain/errors.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import type { ScheduleCommand, ScheduleValue } from "../domain/schedule.ts"
import { isPast } from "../domain/scheduledAt.ts"
import type { TraceContext } from "../domain/traceContext.ts"
import { shardOf } from "../domain/trigger.ts"
import { Metrics } from "../metrics/metrics.ts"
import { ShardCount } from "../store/db.ts"
import { isUniqueViolation } from "../store/projects.ts"
import { withTransaction } from "../store/transaction.ts"
import { orUnavailable } from "../store/unavailable.ts"
import {
  type NewOneShot, triggersCancel, triggersFindById, triggersFindKeyOwner, triggersInsertOneShot, triggersReplaceOneShot
} from "../store/triggers.ts"
import { callTraceContext } from "./callTrace.ts"
import type { QuotaResult } from "../store/quota.ts"
import { InsertBatcher } from "./insertBatcher.ts"
import { QuotaBatcher } from "./quotaBatcher.ts"
import { upsertGenerator } from "./scheduleGenerator.ts"

type OnceValue = Extract<ScheduleValue, { readonly _tag: "Once" }>

export interface ScheduleResult {
  readonly triggerId: string
  readonly scheduledAt: string
  readonly operation: "schedule" | "reschedule"
  readonly kind: "job" | "generator"
  /** A one-shot `registered`, or `skipped` for a past time; a generator `active` (docs/scheduling.md "The answer"). */
  readonly status: "registered" | "skipped" | "active"
  readonly monthQuotaRemaining: number
}

/** A one-shot at a past absolute time, without run-missed, is skipped (docs/scheduling.md "Past dates"). */
const oneShotStatus = (command: ScheduleCommand, value: OnceValue, nowMs: number): "registered" | "skipped" =>
  !value.nowBased && !command.runMissed && isPast(value.fireAtMs, nowMs) ? "skipped" : "registered"

export type Upserted =
  | {
    readonly _tag: "Done"
    readonly id: string
    readonly operation: "schedule" | "reschedule"
    readonly scheduledAtMs: number
    readonly wake: ReadonlyArray<WakeItem>
  }
  | { readonly _tag: "Failed"; readonly error: NotFound | Gone }

const upsertOneShot = (command: ScheduleCommand, value: OnceValue, nowMs: number) =>
  Effect.gen(function*() {
    const shards = (yield* ShardCount).count
    const { fireAtMs } = value
    const status = oneShotStatus(command, value, nowMs)
    const dueAtMs = status === "registered" ? fireAtMs : null
    const write = { status, scheduledAtMs: fireAtMs, definition: command.definition, nowMs, trace: yield* callTraceContext } as const

    const key = command.definition.customKey
    const owner = key === null ? undefined : yield* triggersFindKeyOwner({ projectId: command.projectId, customKey: key })
    if (owner !== undefined && owner.kind === "job") {
      yield* triggersReplaceOneShot({ id: owner.id, ...write })
      return {
        _tag: "Done", id: owner.id, operation: "reschedule", scheduledAtMs: fireAtMs,
        wake: [{ shard: owner.shard, id: owner.id, dueAtMs }]
      } satisfies Upserted
    }
    const replaced: Array<WakeItem> = []
    if (owner !== undefined) {
      // the key moves from a generator to a one-shot trigger: the generator is cancelled
      for (const row of yield* triggersCancel({ ids: [owner.id], nowMs })) replaced.push({ shard: row.shard, id: row.id, dueAtMs: null })
    } else if (command.triggerId !== null) {
      const existing = isUuid(command.triggerId)
        ? yield* triggersFindById({ projectId: command.projectId, id: command.triggerId })
        : undefined
      if (existing === undefined || existing.kind !== "job" || existing.generatorId !== null) {
        return { _tag: "Failed", error: new NotFound("Trigger not found") } satisfies Upserted
      }
      if (existing.status !== "registered") {
        return { _tag: "Failed", error: new Gone("Job is no longer in registered state") } satisfies Upserted
      }
      yield* triggersReplaceOneShot({ id: existing.id, ...write })
      return {
        _tag: "Done", id: existing.id, operation: "reschedule", scheduledAtMs: fireAtMs,
        wake: [{ shard: existing.shard, id: existing.id, dueAtMs }]
      } satisfies Upserted
    }
    const id = uuidv7(nowMs)
    const shard = shardOf(id, shards)
    yield* triggersInsertOneShot({ id, projectId: command.projectId, shard, ...write })
    return {
      _tag: "Done", id, operation: owner === undefined ? "schedule" : "reschedule", scheduledAtMs: fireAtMs,
      wake: [...replaced, { shard, id, dueAtMs }]
    } satisfies Upserted
  })

const quotaExceeded = (limit: number) => new QuotaExceeded(`Monthly quota of ${limit} triggers exceeded`)

/** A command that creates a one-shot trigger with no key or id to match: `plainRow` and `plainOutcome`. */
export const plainOnceValue = (command: ScheduleCommand): OnceValue | undefined =>
  command.value._tag === "Once" && command.definition.customKey === null && command.triggerId === null ? command.value : undefined

/** A plain create's row: a new id on its shard, skipped when past-dated (docs/scheduling.md "Past dates"). */
export const plainRow = (
  command: ScheduleCommand,
  value: OnceValue,
  nowMs: number,
  shards: number,
  trace: TraceContext | null
): NewOneShot => {
  const id = uuidv7(nowMs)
  return {
    id, projectId: command.projectId, shard: shardOf(id, shards), status: oneShotStatus(command, value, nowMs), scheduledAtMs: value.fireAtMs,
    definition: command.definition, nowMs, trace
  }
}

export type PlainOutcome =
  | { readonly _tag: "Created"; readonly result: ScheduleResult; readonly wake: WakeItem | undefined }
  | { readonly _tag: "Refused"; readonly error: QuotaExceeded }

/**
 * What the quota unit of a plain create's row means: the answer, and the wake-up its shard needs
 * (none for a trigger due well beyond the shard actors' lookahead, by another lookahead for nodes
 * whose clocks run ahead: their loader reads it in time); or 402.
 */
export const plainOutcome = (row: NewOneShot, quota: QuotaResult, lookaheadMs: number): PlainOutcome => {
  if (quota._tag === "Exceeded") return { _tag: "Refused", error: quotaExceeded(quota.limit) }
  const result: ScheduleResult = {
    triggerId: row.id, scheduledAt: new Date(row.scheduledAtMs).toISOString(), operation: "schedule", kind: "job",
    status: row.status, monthQuotaRemaining: quota.remaining
  }
  const wakes = row.status === "registered" && row.scheduledAtMs < row.nowMs + 2 * lookaheadMs
  return { _tag: "Created", result, wake: wakes ? { shard: row.shard, id: row.id, dueAtMs: row.scheduledAtMs } : undefined }
}

/** What a plain create for a caller outside any fiber comes to: its outcome, or the batch's failure to render. */
export type PlainCreated = PlainOutcome | { readonly _tag: "Failed"; readonly failure: Effect.Effect<never, unknown> }

/**
 * Plain creates for a caller outside any fiber (the fast lane, api/fastLane.ts): the row queued in
 * the insert batcher with a callback, then `done` with what its quota unit means (the trigger
 * counted when created), or the batch's failure as the use case fails (a database that cannot be
 * reached is ServiceUnavailable). The wake-up, when the outcome has one, is the caller's to send.
 */
export const plainCreates = Effect.gen(function*() {
  const shards = (yield* ShardCount).count
  const batcher = yield* InsertBatcher
  const metrics = yield* Metrics
  const { lookaheadMs } = yield* SchedulerTiming
  return (command: ScheduleCommand, value: OnceValue, nowMs: number, done: (created: PlainCreated) => void): void => {
    // the fast lane serves no traced call (it declines every request while tracing is on)
    const row = plainRow(command, value, nowMs, shards, null)
    batcher.offer(row, (exit) => {
      if (exit._tag === "Failure") return done({ _tag: "Failed", failure: orUnavailable(Effect.failCause(exit.cause)) })
      const outcome = plainOutcome(row, exit.value, lookaheadMs)
      if (outcome._tag === "Created") metrics.triggersCreated("schedule", "job", 1)
      done(outcome)
    })
  }
})

/**
 * A new one-shot trigger with no key or id to match: no transaction; its quota unit and its row are
 * group-committed together.
 */
const insertPlain = (command: ScheduleCommand, value: OnceValue, nowMs: number) =>
  Effect.gen(function*() {
    const row = plainRow(command, value, nowMs, (yield* ShardCount).count, yield* callTraceContext)
    const outcome = plainOutcome(row, yield* (yield* InsertBatcher).insert(row), (yield* SchedulerTiming).lookaheadMs)
    if (outcome._tag === "Refused") return yield* Effect.fail(outcome.error)
    const metrics = yield* Metrics
    metrics.triggersCreated("schedule", "job", 1)
    if (outcome.wake !== undefined) yield* (yield* Wakeups).wake([outcome.wake])
    return outcome.result
  })

/** The use case; a database that cannot be reached is ServiceUnavailable. */
export const scheduleTrigger = (command: ScheduleCommand, nowMs: number) =>
  orUnavailable(Effect.gen(function*() {
    const value = command.value
    const plain = plainOnceValue(command)
    if (plain !== undefined) return yield* insertPlain(command, plain, nowMs)
    const wakeups = yield* Wakeups
    const quota = yield* (yield* QuotaBatcher).consume(command.projectId, nowMs)
    if (quota._tag === "Exceeded") return yield* Effect.fail(quotaExceeded(quota.limit))
    const transaction = withTransaction(
      value._tag === "Once" ? upsertOneShot(command, value, nowMs) : upsertGenerator(command, value, nowMs)
    )
    // two requests creating the same new custom key at once: the loser retries and finds the owner
    const upserted = yield* transaction.pipe(
      Effect.catchIf((error) => isUniqueViolation(error), () => transaction)
    )
    if (upserted._tag === "Failed") return yield* Effect.fail(upserted.error)
    const metrics = yield* Metrics
    if (upserted.operation === "schedule") metrics.triggersCreated("schedule", value._tag === "Once" ? "job" : "generator", 1)
    yield* wakeups.wake(upserted.wake)
    return {
      triggerId: upserted.id,
      scheduledAt: new Date(upserted.scheduledAtMs).toISOString(),
      operation: upserted.operation,
      kind: value._tag === "Once" ? "job" : "generator",
      status: value._tag === "Once" ? oneShotStatus(command, value, nowMs) : "active",
      monthQuotaRemaining: quota.remaining
    } satisfies ScheduleResult
  }))
