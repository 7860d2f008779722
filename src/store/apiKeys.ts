// API keys: only the SHA-256 hash is stored (with a hint and an optional label). Authentication looks a key up by hash; a revocation is
// announced with NOTIFY so running services forget the keys they remembered.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { KEY_REVOKED_CHANNEL } from "./notifications.ts"

export interface ApiKeyListing {
  readonly id: string
  readonly hint: string
  /** What the key is for, as its creator said; null when none. */
  readonly label: string | null
  readonly createdAt: Date
  readonly revokedAt: Date | null
  /** When a request last used it (written at most once a minute per node); null when never. */
  readonly lastUsedAt: Date | null
}

export const apiKeysCreate = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly projectId: string
  readonly hash: Uint8Array
  readonly hint: string
  readonly label: string | null
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO api_keys (id, project_id, key_hash, key_hint, label, created_at)
    VALUES (${input.id}, ${input.projectId}, ${input.hash}, ${input.hint}, ${input.label}, ${new Date(input.nowMs)})`
})

export const apiKeysList = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string; key_hint: string; label: string | null; created_at: Date; revoked_at: Date | null; last_used_at: Date | null }>`
    SELECT id, key_hint, label, created_at, revoked_at, last_used_at FROM api_keys WHERE project_id = ${projectId} ORDER BY created_at, id`
  return rows.map((row): ApiKeyListing => ({
    id: row.id, hint: row.key_hint, label: row.label, createdAt: row.created_at, revokedAt: row.revoked_at, lastUsedAt: row.last_used_at
  }))
})

/**
 * Revokes a key (of `projectId` when given) and tells every running node; `false` when no unrevoked
 * key has that id.
 */
export const apiKeysRevoke = Effect.fnUntraced(function*(input: { readonly id: string; readonly projectId?: string; readonly nowMs: number }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`UPDATE api_keys SET revoked_at = ${new Date(input.nowMs)}
    WHERE id = ${input.id} AND revoked_at IS NULL ${input.projectId === undefined ? sql`` : sql`AND project_id = ${input.projectId}`}
    RETURNING id`
  if (rows.length === 1) yield* sql`SELECT pg_notify(${KEY_REVOKED_CHANNEL}, ${input.id})`
  return rows.length === 1
})

/** The project of a live key with this hash, if any. */
export const apiKeysFindProject = Effect.fnUntraced(function*(hash: Uint8Array) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ project_id: string }>`
    SELECT project_id FROM api_keys WHERE key_hash = ${hash} AND revoked_at IS NULL`
  return rows[0]?.project_id
})

/** Notes that the keys with these hashes were used (one statement for every key a node saw in a minute). */
export const apiKeysNoteUsed = Effect.fnUntraced(function*(input: { readonly hashes: ReadonlyArray<Uint8Array>; readonly atMs: number }) {
  if (input.hashes.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const hex = input.hashes.map((hash) => Buffer.from(hash).toString("hex"))
  yield* sql`UPDATE api_keys SET last_used_at = ${new Date(input.atMs)}
    WHERE key_hash IN (SELECT decode(h, 'hex') FROM unnest(${hex}::text[]) AS h)
      AND (last_used_at IS NULL OR last_used_at < ${new Date(input.atMs)})`
})
