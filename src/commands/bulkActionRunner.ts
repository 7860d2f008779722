// The bulk actions' worker, on every node: a loop that runs chunks (commands/bulkActionChunk.ts) back
// to back while some running action is free, then waits for a kick (an action started on this node)
// or ACTION_POLL_MS. Any node works on any project's actions, one node at a time per action (its row
// is locked for each chunk), so an action goes on when the node that started it stops or dies: the
// others find it at their next look. A chunk that fails is rolled back and done again later (the
// node's other actions first); an action whose chunk fails MAX_CHUNK_FAILURES times in a row on a
// node (not counting the database being away) is given up as `failed`, its error kept.
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import { forkLoop } from "../lib/backgroundLoop.ts"
import { bulkActionsFail } from "../store/bulkActions.ts"
import { failureText, isDatabaseUnavailable } from "../store/unavailable.ts"
import { ChunkFailed, runBulkActionChunk } from "./bulkActionChunk.ts"

/** How often an idle node looks for running actions (one indexed query on bulk_actions_running). */
export const ACTION_POLL_MS = 1_000
export const MAX_CHUNK_FAILURES = 5

export class BulkActionRunner extends Context.Service<BulkActionRunner, {
  /** An action was started here: look now rather than at the next poll. */
  readonly kick: Effect.Effect<void>
}>()("timewheel/BulkActionRunner") {
  static readonly layer = Layer.effect(BulkActionRunner, Effect.gen(function*() {
    const kicks = yield* Queue.sliding<void>(1)
    const failures = new Map<string, number>()

    const failed = (error: ChunkFailed) =>
      Effect.gen(function*() {
        if (isDatabaseUnavailable(error.cause)) {
          yield* Effect.logWarning("bulk action chunk: database unavailable; retrying")
          return yield* Effect.sleep(ACTION_POLL_MS)
        }
        const count = (failures.get(error.actionId) ?? 0) + 1
        failures.set(error.actionId, count)
        yield* Effect.logError(`bulk action ${error.actionId}: chunk failed (${count} of ${MAX_CHUNK_FAILURES})`, Cause.fail(error.cause))
        if (count < MAX_CHUNK_FAILURES) return yield* Effect.sleep(ACTION_POLL_MS)
        failures.delete(error.actionId)
        yield* bulkActionsFail({ id: error.actionId, error: failureText(error.cause), nowMs: yield* Clock.currentTimeMillis })
      })

    /** Chunks while there is work, then a wait for a kick or the next poll. */
    const turn = Effect.gen(function*() {
      for (;;) {
        const advanced = yield* runBulkActionChunk([...failures.keys()]).pipe(
          Effect.tap((action) => Effect.sync(() => action !== undefined && failures.delete(action.id))),
          Effect.catchTag("ChunkFailed", (error) => Effect.as(failed(error), null))
        )
        if (advanced === undefined) break
      }
      yield* Effect.timeoutOption(Queue.take(kicks), ACTION_POLL_MS)
    })
    yield* forkLoop("bulk actions", turn)
    return BulkActionRunner.of({ kick: Effect.asVoid(Queue.offer(kicks, undefined)) })
  }))

  /** For processes and tests without the worker: started actions wait for a node that has one. */
  static readonly none = Layer.succeed(BulkActionRunner)({ kick: Effect.void })
}
