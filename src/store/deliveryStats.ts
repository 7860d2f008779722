// The overview's rollup (schema migrations 6 and 11): per project and minute, attempts by outcome
// and two lateness histograms, of first attempts without and with a gated tag. Each recorded batch
// of executions appends its rollup to delivery_minutes_pending (store/executions.ts,
// domain/deliveryRollup.ts); fold() moves it into delivery_minutes (one node at a time, under an
// advisory lock), so a page view reads at most one row per minute however many executions there
// are. Also: the per-minute samples of queued and in-flight triggers per tag policy, and the
// deletion of rollup rows past what the overview shows.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { MinuteCounts } from "../domain/deliveryRollup.ts"
import { WAITING_SQL } from "./gates.ts"

/** Advisory lock key of the fold ("twrollup"). */
const FOLD_LOCK = 0x7477726f6c6c7570n

/** Folds the pending rows into delivery_minutes; false when another node was folding. */
export const statsFold = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(Effect.gen(function*() {
    const [lock] = yield* sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${FOLD_LOCK}) AS ok`
    if (lock?.ok !== true) return false
    yield* sql`WITH moved AS (DELETE FROM delivery_minutes_pending RETURNING *)
      INSERT INTO delivery_minutes (project_id, minute, succeeded, failed, dead_letters, lateness, gated_lateness)
      SELECT project_id, minute, sum(succeeded), sum(failed), sum(dead_letters), coalesce(timewheel_hist_sum(lateness), '{}'),
        coalesce(timewheel_hist_sum(gated_lateness), '{}')
      FROM moved GROUP BY project_id, minute ORDER BY project_id, minute
      ON CONFLICT (project_id, minute) DO UPDATE SET
        succeeded = delivery_minutes.succeeded + excluded.succeeded,
        failed = delivery_minutes.failed + excluded.failed,
        dead_letters = delivery_minutes.dead_letters + excluded.dead_letters,
        lateness = timewheel_hist_add(delivery_minutes.lateness, excluded.lateness),
        gated_lateness = timewheel_hist_add(delivery_minutes.gated_lateness, excluded.gated_lateness)`
    return true
  }))
})

/**
 * Samples the queued and in-flight triggers of every tag policy into the row of `minuteMs`: sampled
 * several times a minute, the row keeps the minute's peak of each (a short hold shows).
 */
export const statsSampleTagPolicies = Effect.fnUntraced(function*(minuteMs: number) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO tag_policy_samples (project_id, tag, minute, queued, in_flight)
    SELECT p.project_id, p.tag, ${new Date(minuteMs)},
      (SELECT count(*) FROM gate_slots s WHERE s.project_id = p.project_id AND s.tag = p.tag AND NOT s.running
        AND EXISTS (SELECT FROM triggers t WHERE t.id = s.trigger_id AND ${sql.unsafe(WAITING_SQL)})),
      (SELECT coalesce(sum(l.in_flight), 0) FROM gate_leases l WHERE l.project_id = p.project_id AND l.tag = p.tag AND l.gone_at IS NULL)
    FROM tag_policies p
    ON CONFLICT (project_id, minute, tag) DO UPDATE SET
      queued = greatest(tag_policy_samples.queued, excluded.queued),
      in_flight = greatest(tag_policy_samples.in_flight, excluded.in_flight)
    WHERE excluded.queued > tag_policy_samples.queued OR excluded.in_flight > tag_policy_samples.in_flight`
})

/** Deletes rollup rows and samples older than `beforeMs`. */
export const statsPurge = Effect.fnUntraced(function*(beforeMs: number) {
  const sql = yield* SqlClient.SqlClient
  const before = new Date(beforeMs)
  yield* sql`DELETE FROM delivery_minutes WHERE minute < ${before}`
  yield* sql`DELETE FROM tag_policy_samples WHERE minute < ${before}`
})

/** The project's minutes from `fromMs` on, folded and pending together (at most one row per minute). */
export const statsMinutes = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly fromMs: number }) {
  const sql = yield* SqlClient.SqlClient
  const from = new Date(input.fromMs)
  const rows = yield* sql<{
    minute: Date; succeeded: string; failed: string; dead_letters: string; lateness: Array<string>; gated_lateness: Array<string>
  }>`
    SELECT minute, sum(succeeded)::text AS succeeded, sum(failed)::text AS failed, sum(dead_letters)::text AS dead_letters,
      coalesce(timewheel_hist_sum(lateness), '{}')::text[] AS lateness,
      coalesce(timewheel_hist_sum(gated_lateness), '{}')::text[] AS gated_lateness
    FROM (
      SELECT minute, succeeded, failed, dead_letters, lateness, gated_lateness FROM delivery_minutes
        WHERE project_id = ${input.projectId} AND minute >= ${from}
      UNION ALL
      SELECT minute, succeeded, failed, dead_letters, lateness, gated_lateness FROM delivery_minutes_pending
        WHERE project_id = ${input.projectId} AND minute >= ${from}
    ) m
    GROUP BY minute ORDER BY minute`
  return rows.map((row): MinuteCounts => ({
    minuteMs: row.minute.getTime(),
    succeeded: Number(row.succeeded),
    failed: Number(row.failed),
    deadLetters: Number(row.dead_letters),
    lateness: row.lateness.map(Number),
    gatedLateness: row.gated_lateness.map(Number)
  }))
})

/** The project's tag policy samples from `fromMs` on, by tag then minute. */
export const statsTagPolicySamples = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly fromMs: number }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ tag: string; minute: Date; queued: number; in_flight: number }>`
    SELECT tag, minute, queued, in_flight FROM tag_policy_samples
    WHERE project_id = ${input.projectId} AND minute >= ${new Date(input.fromMs)} ORDER BY tag, minute`
  return rows.map((row) => ({ tag: row.tag, minuteMs: row.minute.getTime(), queued: row.queued, inFlight: row.in_flight }))
})
