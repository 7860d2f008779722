// The holds of tags refused by their target (migration 10; domain/gates/gateHold.ts has the rules). A
// refusal is settled in one transaction on the tag's row (locked), with the database's clock, and
// announced to every node (notification: `projectId tag heldUntilMs`) when it moved the hold; the
// policy view reads the hold (heldUntil).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { holdAfterRefusal, holdAfterSuccess, type HoldState, type Refusal } from "../domain/gates/gateHold.ts"
import { GATE_HOLDS_CHANNEL } from "./notifications.ts"

interface HoldRecord {
  since_ms: number
  until_ms: number
  backoff_ms: number
}

const toHold = (row: HoldRecord): HoldState => ({ heldSinceMs: row.since_ms, heldUntilMs: row.until_ms, backoffMs: row.backoff_ms })

const lockedHold = Effect.fnUntraced(function*(projectId: string, tag: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<HoldRecord & { now_ms: number }>`
    SELECT (extract(epoch FROM held_since) * 1000)::float8 AS since_ms, (extract(epoch FROM held_until) * 1000)::float8 AS until_ms,
      backoff_ms, (extract(epoch FROM now()) * 1000)::float8 AS now_ms
    FROM gate_holds WHERE project_id = ${projectId} AND tag = ${tag} FOR UPDATE`
  const nowRows = rows.length > 0 ? rows : yield* sql<{ now_ms: number }>`SELECT (extract(epoch FROM now()) * 1000)::float8 AS now_ms`
  return { hold: rows[0] === undefined ? null : toHold(rows[0]), nowMs: nowRows[0]!.now_ms }
})

const writeHold = Effect.fnUntraced(function*(projectId: string, tag: string, hold: HoldState) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO gate_holds (project_id, tag, held_since, held_until, backoff_ms)
    VALUES (${projectId}, ${tag}, ${new Date(hold.heldSinceMs)}, ${new Date(hold.heldUntilMs)}, ${Math.round(hold.backoffMs)})
    ON CONFLICT (project_id, tag) DO UPDATE SET held_since = excluded.held_since, held_until = excluded.held_until,
      backoff_ms = excluded.backoff_ms`
})

/**
 * A refusal of the target for these tags of a project: the time its Retry-After named (null: none)
 * and when its request left, both on the database's clock. Returns the tags whose hold it moved,
 * with their new hold (database clock).
 */
export const gateHoldsRefused = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tags: ReadonlyArray<string>
  readonly refusal: Refusal
}) {
  const sql = yield* SqlClient.SqlClient
  const moved: Array<{ readonly tag: string; readonly hold: HoldState }> = []
  for (const tag of [...new Set(input.tags)].sort()) {
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`INSERT INTO gate_holds (project_id, tag, held_since, held_until, backoff_ms)
        VALUES (${input.projectId}, ${tag}, '-infinity', '-infinity', 0) ON CONFLICT DO NOTHING`
      const { hold, nowMs } = yield* lockedHold(input.projectId, tag)
      const previous = hold !== null && hold.heldUntilMs === -Infinity ? null : hold
      const next = holdAfterRefusal(previous, input.refusal, nowMs)
      if (next === null) {
        if (previous === null) yield* sql`DELETE FROM gate_holds WHERE project_id = ${input.projectId} AND tag = ${tag}`
        return
      }
      yield* writeHold(input.projectId, tag, next)
      yield* sql`SELECT pg_notify(${GATE_HOLDS_CHANNEL}, ${`${input.projectId} ${tag} ${next.heldUntilMs}`})`
      moved.push({ tag, hold: next })
    }))
  }
  return moved
})

/** A 2xx of these tags: their backoff starts again from the first step. */
export const gateHoldsSucceeded = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tags: ReadonlyArray<string> }) {
  const sql = yield* SqlClient.SqlClient
  for (const tag of input.tags) {
    yield* sql.withTransaction(Effect.gen(function*() {
      const { hold } = yield* lockedHold(input.projectId, tag)
      const next = holdAfterSuccess(hold)
      if (next !== null) yield* writeHold(input.projectId, tag, next)
    }))
  }
})

/** The tags of a project held now, with the time each hold ends. */
export const gateHoldsActive = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tags: ReadonlyArray<string> }) {
  const out = new Map<string, Date>()
  if (input.tags.length === 0) return out as ReadonlyMap<string, Date>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ tag: string; held_until: Date }>`
    SELECT tag, held_until FROM gate_holds
    WHERE project_id = ${input.projectId} AND tag = ANY(${input.tags}::text[]) AND held_until > now()`
  for (const row of rows) out.set(row.tag, row.held_until)
  return out as ReadonlyMap<string, Date>
})
