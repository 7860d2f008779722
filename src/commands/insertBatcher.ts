// Group commit of plain creates: /schedule calls that create a one-shot trigger without a custom key
// or id queue their row here; per project and month, one statement takes the quota units and inserts
// the granted rows, so many calls share one round trip and one WAL flush. Each call learns its own
// quota result (rows past the quota are not created). A row that fails its statement fails alone (the
// group commit settles the others again without it); a database that cannot be reached fails the
// batch at once. The fast lane (api/fastLane.ts) queues its rows with a callback, outside any fiber.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { monthOf, type QuotaResult, splitGrant } from "../store/quota.ts"
import { type NewOneShot, triggersCreateWithinQuota } from "../store/triggers.ts"
import { makeGroupCommitQueue } from "../lib/groupCommit.ts"
import { isDatabaseUnavailable } from "../store/unavailable.ts"

const MAX_BATCH = 1_000

export class InsertBatcher extends Context.Service<InsertBatcher, {
  /** Creates the trigger if the project's monthly quota allows it (one unit), and says which. */
  readonly insert: (row: NewOneShot) => Effect.Effect<QuotaResult, unknown>
  /** The same for a caller outside any fiber: `settle` gets the outcome (and must not throw). */
  readonly offer: (row: NewOneShot, settle: (exit: Exit.Exit<QuotaResult, unknown>) => void) => void
}>()("timewheel/InsertBatcher") {
  static readonly layer = Layer.effect(InsertBatcher, Effect.gen(function*() {
    const queue = yield* makeGroupCommitQueue({
      maxBatch: MAX_BATCH,
      name: "insert batcher",
      groupOf: (row: NewOneShot) => `${row.projectId} ${monthOf(row.nowMs)}`,
      failsWholeGroup: isDatabaseUnavailable,
      run: (rows) =>
        Effect.map(
          triggersCreateWithinQuota({ projectId: rows[0]!.projectId, month: monthOf(rows[0]!.nowMs), rows }),
          (grant) => splitGrant(grant, rows.length)
        )
    })
    return InsertBatcher.of({ insert: queue.call, offer: queue.offer })
  }))
}
