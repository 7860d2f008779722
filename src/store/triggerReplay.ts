// Replay of a completed trigger (POST /jobs/{id}/executions): one compare-and-set statement moves
// it from `completed` back to `queued` for a fresh attempt marked `triggered_by = 'retry'`, so two
// concurrent replays (or a replay racing any other state change) can never queue it twice. An
// ungated trigger is claimed by the replaying node (claimed_by), as a scheduler claim does, which
// hands it to delivery; one with gated tags waits at its gates like any other gated trigger.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { GATED_SQL, GATED_TAGS_SQL } from "./gates.ts"

/** Its gated tags (none: to be sent by this node) when the trigger was `completed`; undefined when it was not. */
export const triggersQueueReplay = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
  /** The node that hands it to delivery next (when it has no gated tag). */
  readonly node: string
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const rows = yield* sql<{ id: string; gate_tags: ReadonlyArray<string> }>`
    WITH replayed AS (
      UPDATE triggers t
      SET status = 'queued', triggered_by = 'retry', due_at = NULL, claimed_at = ${now}, updated_at = ${now},
        claimed_by = CASE WHEN ${sql.unsafe(GATED_SQL)} THEN NULL ELSE ${input.node} END
      WHERE t.id = ${input.id} AND t.project_id = ${input.projectId} AND t.kind = 'job' AND t.status = 'completed'
      RETURNING t.id, t.project_id, t.scheduled_at, ${sql.unsafe(GATED_TAGS_SQL)} AS gate_tags
    ), held AS (
      INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before)
      SELECT r.id, g.tag, r.project_id, coalesce(r.scheduled_at, ${now}), ${now}
      FROM replayed r CROSS JOIN unnest(r.gate_tags) AS g(tag)
      ON CONFLICT (trigger_id, tag) DO UPDATE SET running = false, not_before = excluded.not_before
    )
    SELECT id, gate_tags FROM replayed`
  return rows[0] === undefined ? undefined : { gateTags: rows[0].gate_tags }
})
