// Replay of a completed trigger (POST /jobs/{id}/executions): one compare-and-set statement moves
// it from `completed` back to `queued` for a fresh attempt marked `triggered_by = 'retry'`, so two
// concurrent replays (or a replay racing any other state change) can never queue it twice. The
// replaying node claims it (claimed_by), as a scheduler claim does, before handing it to delivery.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

/** `true` when the trigger was `completed` (and is now `queued`); `false` when it was not. */
export const triggersQueueReplay = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
  /** The node that hands it to delivery next. */
  readonly node: string
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    UPDATE triggers
    SET status = 'queued', triggered_by = 'retry', due_at = NULL, claimed_by = ${input.node}, claimed_at = ${new Date(input.nowMs)},
      updated_at = ${new Date(input.nowMs)}
    WHERE id = ${input.id} AND project_id = ${input.projectId} AND kind = 'job' AND status = 'completed'
    RETURNING id`
  return rows.length === 1
})
