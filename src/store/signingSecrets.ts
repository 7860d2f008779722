// Each project's signing secrets (migration 5): the current one, and during a rotation the previous
// one with the instant it stops signing. The statements that hand triggers to delivery (claims,
// starts, gate admissions) read them with the trigger (`signingSecretsOf`), so signing costs no query
// of its own and a rotation takes effect at the next claim on every node.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

/**
 * The signing secrets of the project `p` at `now`, as a text[] (current first; the previous one while
 * its overlap lasts). SQL over the alias `p` of `projects`.
 */
export const signingSecretsOf = (sql: SqlClient.SqlClient, now: Date) =>
  sql`CASE WHEN p.previous_signing_secret_until > ${now} THEN ARRAY[p.signing_secret, p.previous_signing_secret]
    ELSE ARRAY[p.signing_secret] END`

export interface SigningSecrets {
  readonly current: string
  /** The previous secret and until when it signs too; null when no rotation overlaps now. */
  readonly previous: { readonly secret: string; readonly untilMs: number } | null
}

/** The named project's signing secrets at `nowMs`; undefined when there is no such project. */
export const projectsSigningSecrets = Effect.fnUntraced(function*(input: { readonly name: string; readonly nowMs: number }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ current: string; previous: string | null; until_ms: string | null }>`
    SELECT signing_secret AS current,
      CASE WHEN previous_signing_secret_until > ${new Date(input.nowMs)} THEN previous_signing_secret END AS previous,
      (extract(epoch FROM previous_signing_secret_until) * 1000)::bigint::text AS until_ms
    FROM projects WHERE name = ${input.name}`
  const row = rows[0]
  if (row === undefined) return undefined
  return {
    current: row.current,
    previous: row.previous === null ? null : { secret: row.previous, untilMs: Number(row.until_ms) }
  } satisfies SigningSecrets
})

/**
 * Makes `secret` the named project's signing secret; the one it replaces keeps signing for
 * `overlapMs` (none when 0). A previous secret still overlapping is dropped at once. Whether the
 * project exists.
 */
export const projectsRotateSigningSecret = Effect.fnUntraced(function*(input: {
  readonly name: string
  readonly secret: string
  readonly overlapMs: number
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const overlapping = input.overlapMs > 0
  const rows = yield* sql`
    UPDATE projects SET
      previous_signing_secret = ${overlapping ? sql`signing_secret` : sql`NULL`},
      previous_signing_secret_until = ${overlapping ? new Date(input.nowMs + input.overlapMs) : null},
      signing_secret = ${input.secret},
      updated_at = ${new Date(input.nowMs)}
    WHERE name = ${input.name}
    RETURNING id`
  return rows.length === 1
})

/** Forgets previous secrets whose overlap has ended; how many. */
export const signingSecretsDropExpired = Effect.fnUntraced(function*(nowMs: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    UPDATE projects SET previous_signing_secret = NULL, previous_signing_secret_until = NULL
    WHERE previous_signing_secret_until <= ${new Date(nowMs)}
    RETURNING id`
  return rows.length
})
