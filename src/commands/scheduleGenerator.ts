// /schedule with `cron(...)`: create a generator with its first instance, or edit one in place by id
// (always checked with cron) or custom key, replacing its upcoming instance at once (new id, time
// = the response scheduledAt). A key owned by a one-shot trigger moves to the generator, which
// cancels the one-shot (docs/scheduling.md "Editing"; docs/cron.md "Editing and cancelling").
import * as Effect from "effect/Effect"
import type { WakeItem } from "../cluster/wakeups.ts"
import { Gone, NotFound } from "../domain/errors.ts"
import { nextInstanceAfter } from "../domain/generator.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import type { ScheduleCommand, ScheduleValue } from "../domain/schedule.ts"
import { shardOf } from "../domain/trigger.ts"
import { ShardCount } from "../store/db.ts"
import { generatorsInsert, generatorsReplace, instancesCancelUpcoming, instancesInsert } from "../store/generators.ts"
import { triggersCancel, triggersFindById, triggersFindKeyOwner, type TriggerRef } from "../store/triggers.ts"
import { callTraceContext } from "./callTrace.ts"
import type { Upserted } from "./schedule.ts"

type CronValue = Extract<ScheduleValue, { readonly _tag: "Cron" }>

const cancelled = (rows: ReadonlyArray<{ readonly id: string; readonly shard: number }>): Array<WakeItem> =>
  rows.map((row) => ({ shard: row.shard, id: row.id, dueAtMs: null }))

export const upsertGenerator = (command: ScheduleCommand, value: CronValue, nowMs: number) =>
  Effect.gen(function*() {
    const shards = (yield* ShardCount).count
    const wake: Array<WakeItem> = []
    const key = command.definition.customKey
    const owner = key === null ? undefined : yield* triggersFindKeyOwner({ projectId: command.projectId, customKey: key })

    let target: TriggerRef | undefined
    if (command.triggerId !== null) {
      target = isUuid(command.triggerId) ? yield* triggersFindById({ projectId: command.projectId, id: command.triggerId }) : undefined
      if (target === undefined || target.kind !== "generator") {
        return { _tag: "Failed", error: new NotFound("Generator not found") } satisfies Upserted
      }
      if (target.status !== "active") {
        return { _tag: "Failed", error: new Gone("Generator is no longer active") } satisfies Upserted
      }
    } else if (owner !== undefined && owner.kind === "generator") {
      target = owner
    }
    // another trigger holding the key gives it up (a kind switch cancels it)
    if (owner !== undefined && owner.id !== target?.id) wake.push(...cancelled(yield* triggersCancel({ ids: [owner.id], nowMs })))

    const id = target?.id ?? uuidv7(nowMs)
    const shard = target?.shard ?? shardOf(id, shards)
    const cron = { cronExpr: value.cronExpr, cronTz: value.cronTz }
    const trace = yield* callTraceContext
    if (target === undefined) {
      yield* generatorsInsert({ id, projectId: command.projectId, shard, ...cron, definition: command.definition, nowMs, trace })
    } else {
      yield* generatorsReplace({ id, ...cron, definition: command.definition, nowMs, trace })
      wake.push(...cancelled(yield* instancesCancelUpcoming({ generatorId: id, nowMs })))
    }
    // `H` is seeded by the generator id, so the first time is computed once the id is known
    const scheduledAtMs = nextInstanceAfter({ id, ...cron }, nowMs)!
    const instanceId = uuidv7(nowMs)
    const created = yield* instancesInsert({ instances: [{ generatorId: id, instanceId, scheduledAtMs }], nowMs })
    for (const row of created) wake.push({ shard: row.shard, id: row.id, dueAtMs: scheduledAtMs })
    return {
      _tag: "Done", id, operation: target === undefined && owner === undefined ? "schedule" : "reschedule", scheduledAtMs, wake
    } satisfies Upserted
  })
