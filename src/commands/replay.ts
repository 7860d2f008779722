// Replay of a completed trigger (POST /jobs/{id}/executions with `triggeredBy: retry`; docs/reading.md
// "Replay"): the trigger must be `completed` (else 410 `Job is not completed (status=…)`). One
// compare-and-set moves it to `queued` for a fresh attempt marked `triggeredBy: retry`, claimed by
// this node, which then hands it to delivery — or, when one of its tags is gated, it waits at its
// gates like any other held-back trigger (a replay never goes around a concurrency limit). A bulk
// replay (commands/bulkActionChunk.ts) queues its chunks the same way and hands them over with
// `handOverReplays`.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { NodeIdentity } from "../cluster/node.ts"
import { Wakeups } from "../cluster/wakeups.ts"
import { Dispatcher } from "../delivery/dispatcher.ts"
import { Gone } from "../domain/errors.ts"
import { gateKicks } from "../gates/kicks.ts"
import { ShardCount } from "../store/db.ts"
import { type QueuedReplay, triggersQueueReplay } from "../store/triggerReplay.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { findTrigger } from "./logs.ts"

const notCompleted = (status: string) => Effect.fail(new Gone(`Job is not completed (status=${status})`))

/** Queues a fresh attempt of a completed trigger; the answer of the replay endpoint. */
export const replayTrigger = (projectId: string, id: string) => orUnavailable(replay(projectId, id))

/**
 * After the commit that queued them: this node delivers the ungated replays (it claimed them: if it
 * dies first, crash recovery sends them), the gates of the others are kicked to look at them.
 */
export const handOverReplays = (projectId: string, queued: ReadonlyArray<QueuedReplay>) =>
  Effect.gen(function*() {
    const ungated = queued.filter((replay) => replay.gateTags.length === 0).map((replay) => replay.id)
    const gated = queued.filter((replay) => replay.gateTags.length > 0).map((replay) => ({ projectId, gateTags: replay.gateTags }))
    if (ungated.length > 0) yield* (yield* Dispatcher).submit(ungated)
    if (gated.length > 0) yield* (yield* Wakeups).wake(gateKicks(gated, (yield* ShardCount).count))
  })

const replay = Effect.fnUntraced(function*(projectId: string, id: string) {
  const trigger = yield* findTrigger(projectId, id)
  if (trigger.kind !== "job" || trigger.status !== "completed") return yield* notCompleted(trigger.status)
  const nowMs = yield* Clock.currentTimeMillis
  const node = (yield* NodeIdentity).id
  const queued = yield* triggersQueueReplay({ projectId, ids: [trigger.id], node, nowMs })
  if (queued.length === 0) {
    // someone else changed it between the read and the compare-and-set (e.g. a concurrent replay)
    const now = yield* findTrigger(projectId, trigger.id)
    return yield* notCompleted(now.status)
  }
  yield* handOverReplays(projectId, queued)
  return { jobId: trigger.id, status: "queued" as const }
})
