// /schedule as one command: consume a quota unit, then in one transaction create or edit the
// trigger by custom key or id (SPEC "/schedule" rules 3–8), then wake the shard that owns it.
// This module handles one-shot values; scheduleGenerator.ts handles `cron(...)`.
import * as Effect from "effect/Effect"
import { type WakeItem, Wakeups } from "../cluster/wakeups.ts"
import { SchedulerTiming } from "../config.ts"
import { Gone, NotFound, QuotaExceeded } from "../domain/errors.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import type { ScheduleCommand, ScheduleValue } from "../domain/schedule.ts"
import { isPast } from "../domain/scheduledAt.ts"
import { shardOf } from "../domain/trigger.ts"
import { Metrics } from "../ops/metrics.ts"
import { ShardCount } from "../store/db.ts"
import { isUniqueViolation } from "../store/projects.ts"
import { withTransaction } from "../store/transaction.ts"
import { orUnavailable } from "../store/unavailable.ts"
import {
  triggersCancel, triggersFindById, triggersFindKeyOwner, triggersInsertOneShot, triggersReplaceOneShot
} from "../store/triggers.ts"
import { callTraceContext } from "./callTrace.ts"
import { InsertBatcher } from "./insertBatcher.ts"
import { QuotaBatcher } from "./quotaBatcher.ts"
import { upsertGenerator } from "./scheduleGenerator.ts"

type OnceValue = Extract<ScheduleValue, { readonly _tag: "Once" }>

export interface ScheduleResult {
  readonly triggerId: string
  readonly scheduledAt: string
  readonly operation: "schedule" | "reschedule"
  readonly kind: "job" | "generator"
  /** DECISIONS "Error hints": a one-shot `registered` or `skipped` (its time is past), a generator `active`. */
  readonly status: "registered" | "skipped" | "active"
  readonly monthQuotaRemaining: number
}

/** A one-shot at a past absolute time, without run-missed, is skipped (SPEC "States and transitions"). */
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

/**
 * A new one-shot trigger with no key or id to match: no transaction; its quota unit and its row are
 * group-committed together.
 */
const insertPlain = (command: ScheduleCommand, value: OnceValue, nowMs: number) =>
  Effect.gen(function*() {
    const shards = (yield* ShardCount).count
    const { fireAtMs } = value
    const status = oneShotStatus(command, value, nowMs)
    const id = uuidv7(nowMs)
    const shard = shardOf(id, shards)
    const quota = yield* (yield* InsertBatcher).insert({
      id, projectId: command.projectId, shard, status, scheduledAtMs: fireAtMs, definition: command.definition, nowMs,
      trace: yield* callTraceContext
    })
    if (quota._tag === "Exceeded") return yield* Effect.fail(quotaExceeded(quota.limit))
    const metrics = yield* Metrics
    metrics.triggersCreated("schedule", "job", 1)
    // a trigger due well beyond the shard actors' lookahead (by another lookahead, for nodes whose
    // clocks run ahead) is read by their loader in time: no wake-up
    if (status === "registered" && fireAtMs < nowMs + 2 * (yield* SchedulerTiming).lookaheadMs) {
      yield* (yield* Wakeups).wake([{ shard, id, dueAtMs: fireAtMs }])
    }
    return {
      triggerId: id, scheduledAt: new Date(fireAtMs).toISOString(), operation: "schedule", kind: "job", status,
      monthQuotaRemaining: quota.remaining
    } satisfies ScheduleResult
  })

/** The use case; a database that cannot be reached is ServiceUnavailable. */
export const scheduleTrigger = (command: ScheduleCommand, nowMs: number) =>
  orUnavailable(Effect.gen(function*() {
    const value = command.value
    if (value._tag === "Once" && command.definition.customKey === null && command.triggerId === null) {
      return yield* insertPlain(command, value, nowMs)
    }
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
