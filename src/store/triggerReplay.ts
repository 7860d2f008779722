// Replay of completed triggers (POST /jobs/{id}/executions, and each chunk of a bulk replay): one
// compare-and-set statement moves them from `completed` back to `queued` for a fresh attempt marked
// `triggered_by = 'retry'`, so two concurrent replays (or a replay racing any other state change) can
// never queue one twice. An ungated trigger is claimed by the replaying node (claimed_by), as a
// scheduler claim does, which hands it to delivery; one with gated tags waits at its gates like any
// other gated trigger. The same statement writes what the attempt sends instead of the stored URL and
// headers (replay_overrides, a bulk replay's; its headers sealed with ENCRYPTION_KEYS), or deletes an
// earlier replay's.
// The ids are cast to uuid[] once, in a subquery (`= ANY((SELECT $ids::uuid[])::uuid[])`): the parameter
// comes as text[], and when the planner scanned the project's rows instead of looking the ids up (its
// statistics not gathered yet), `= ANY($ids::uuid[])` cast the whole array again for every row: a
// chunk of 500 took 1.2 s instead of 15 ms.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { ReplayOverride } from "../domain/replayOverride.ts"
import { GATED_SQL, GATED_TAGS_SQL } from "./gates.ts"
import { EncryptionKeys } from "./sealedRequests.ts"
import { sealReplayHeaders } from "./sealedReplays.ts"
import { LATEST_IS_DEAD_LETTER_SQL } from "./triggerFilter.ts"

export interface QueuedReplay {
  readonly id: string
  /** Its gated tags; none: to be sent by the replaying node. */
  readonly gateTags: ReadonlyArray<string>
}

/** The triggers that were `completed` (of the project, one-shots) and are now queued for a replay. */
export const triggersQueueReplay = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly ids: ReadonlyArray<string>
  /** The node that hands them to delivery next (those without a gated tag). */
  readonly node: string
  readonly nowMs: number
  /** Only those whose latest execution is a dead letter (a bulk replay redrives dead letters). */
  readonly deadLettersOnly?: boolean
  /** What their attempt sends instead (a bulk replay's `replay`); none: the stored request. */
  readonly override?: ReplayOverride | null
}) {
  if (input.ids.length === 0) return [] as Array<QueuedReplay>
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const override = input.override ?? null
  // sealed when ENCRYPTION_KEYS is set (store/sealedReplays.ts)
  const headers = override === null ? null : sealReplayHeaders(override.headers, yield* EncryptionKeys)
  const rows = yield* sql<{ id: string; gate_tags: ReadonlyArray<string> }>`
    WITH replayed AS (
      UPDATE triggers t
      SET status = 'queued', triggered_by = 'retry', due_at = NULL, claimed_at = ${now}, updated_at = ${now},
        claimed_by = CASE WHEN ${sql.unsafe(GATED_SQL)} THEN NULL ELSE ${input.node} END
      WHERE t.id = ANY((SELECT ${input.ids}::uuid[])::uuid[]) AND t.project_id = ${input.projectId} AND t.kind = 'job'
        AND t.status = 'completed'
        ${input.deadLettersOnly === true ? sql.unsafe(`AND ${LATEST_IS_DEAD_LETTER_SQL} IS TRUE`) : sql.unsafe("")}
      RETURNING t.id, t.project_id, t.scheduled_at, ${sql.unsafe(GATED_TAGS_SQL)} AS gate_tags
    ), held AS (
      INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before)
      SELECT r.id, g.tag, r.project_id, coalesce(r.scheduled_at, ${now}), ${now}
      FROM replayed r CROSS JOIN unnest(r.gate_tags) AS g(tag)
      ON CONFLICT (trigger_id, tag) DO UPDATE SET running = false, not_before = excluded.not_before
    ), ${override === null
      ? sql`overridden AS (DELETE FROM replay_overrides o USING replayed r WHERE o.trigger_id = r.id)`
      : sql`overridden AS (
      INSERT INTO replay_overrides (trigger_id, url, headers, sealed_with)
      SELECT r.id, ${override.url}, ${JSON.stringify(headers!.headers)}::jsonb, ${headers!.sealedWith} FROM replayed r
      ON CONFLICT (trigger_id) DO UPDATE SET url = excluded.url, headers = excluded.headers, sealed_with = excluded.sealed_with)`}
    SELECT id, gate_tags FROM replayed`
  return rows.map((row): QueuedReplay => ({ id: row.id, gateTags: row.gate_tags }))
})
