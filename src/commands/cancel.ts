// DELETE /cancel as one command (docs/scheduling.md "DELETE /cancel", its checks after the key's): by id a
// one-shot trigger, instance or generator; by custom key an active generator first, else a one-shot.
import * as Effect from "effect/Effect"
import { Wakeups } from "../cluster/wakeups.ts"
import { Gone, NotFound } from "../domain/errors.ts"
import { isUuid } from "../domain/ids.ts"
import { isPendingStatus } from "../domain/trigger.ts"
import { withTransaction } from "../store/transaction.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { triggersCancel, triggersFindById, triggersFindForCancelByKey, type TriggerRef } from "../store/triggers.ts"

export type CancelTarget = { readonly _tag: "Id"; readonly id: string } | { readonly _tag: "CustomKey"; readonly customKey: string }

const decide = (target: CancelTarget, ref: TriggerRef | undefined): NotFound | Gone | undefined => {
  if (ref === undefined) return new NotFound("Job not found")
  if (ref.kind === "generator") {
    return ref.status === "active" ? undefined : new Gone("Generator already cancelled")
  }
  if (isPendingStatus(ref.status)) return undefined
  if (ref.status === "cancelled" && target._tag === "CustomKey") return new NotFound("Job not found")
  return new Gone(`Job is no longer cancellable (status=${ref.status})`)
}

/** The use case; a database that cannot be reached is ServiceUnavailable. */
export const cancelTrigger = (projectId: string, target: CancelTarget, nowMs: number) =>
  orUnavailable(Effect.gen(function*() {
    const wakeups = yield* Wakeups
    const cancelled = yield* withTransaction(Effect.gen(function*() {
      const ref = target._tag === "Id"
        ? (isUuid(target.id) ? yield* triggersFindById({ projectId, id: target.id }) : undefined)
        : yield* triggersFindForCancelByKey({ projectId, customKey: target.customKey })
      const refusal = decide(target, ref)
      if (refusal !== undefined) return yield* Effect.fail(refusal)
      return yield* triggersCancel({ ids: [ref!.id], nowMs })
    }))
    yield* wakeups.wake(cancelled.map((row) => ({ shard: row.shard, id: row.id, dueAtMs: null })))
  }))
