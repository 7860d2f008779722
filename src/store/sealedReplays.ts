// Encryption at rest of what a bulk replay adds to the requests it sends (ENCRYPTION_KEYS,
// domain/sealing.ts; docs/encryption.md): the headers of its `replay` (an `Authorization` header, as
// often as not), stored twice — with the action (bulk_actions.replay, read by each chunk) and with
// each trigger it queues (replay_overrides, read by delivery). Sealed like a trigger's headers: the
// jsonb holds the base64 of the sealed pairs, the key's id is in `sealed_with`. The URL is not
// sealed (as a trigger's is not). An action's `replay_key` says which replay it is, for the rule that
// the same action runs once at a time: the replay's JSON when stored plain, else a keyed
// fingerprint of it (a sealed value differs each time it is sealed).
// Also the key ids these rows use and their re-sealing by `keys rotate-encryption`.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { ReplayOverride } from "../domain/replayOverride.ts"
import { fingerprint, keyFor, type Keyring, openBytes, sealBytes } from "../domain/sealing.ts"
import type { HeaderPairs } from "../domain/trigger.ts"

const PURPOSE = "replay headers"

/** A replay's headers as stored: the pairs, or (sealed) the base64 of the sealed pairs, and the key's id. */
export interface StoredReplayHeaders {
  readonly headers: HeaderPairs | string
  readonly sealedWith: string | null
}

/** The headers as a write stores them: plain without keys, else sealed with the writer key. */
export const sealReplayHeaders = (headers: HeaderPairs, keyring: Keyring | null): StoredReplayHeaders =>
  keyring === null
    ? { headers, sealedWith: null }
    : { headers: sealBytes(keyring.writer, PURPOSE, Buffer.from(JSON.stringify(headers))).toString("base64"), sealedWith: keyring.writer.id }

/** Stored headers back as pairs; throws SealedValueError when their key is not configured. */
export const openReplayHeaders = (stored: unknown, sealedWith: string | null, keyring: Keyring | null): HeaderPairs =>
  sealedWith === null
    ? stored as HeaderPairs
    : JSON.parse(openBytes(keyFor(keyring, sealedWith), PURPOSE, Buffer.from(stored as string, "base64")).toString("utf8")) as HeaderPairs

/** A bulk action's replay as stored: the jsonb text, its key's id, and its identity (`replay_key`). */
export const storedReplay = (replay: ReplayOverride | null, keyring: Keyring | null) => {
  if (replay === null) return { json: null, sealedWith: null, key: null }
  const plain = JSON.stringify(replay)
  const headers = sealReplayHeaders(replay.headers, keyring)
  return {
    json: JSON.stringify({ url: replay.url, headers: headers.headers }),
    sealedWith: headers.sealedWith,
    // plain: the JSON normalised as jsonb prints it (the SQL casts it), as rows before sealing have it
    key: keyring === null ? null : `hmac-sha256:${fingerprint(keyring.writer, PURPOSE, plain)}`
  }
}

/** A bulk action's stored replay back as it was given. */
export const openStoredReplay = (
  stored: { readonly url: string | null; readonly headers: unknown } | null,
  sealedWith: string | null,
  keyring: Keyring | null
): ReplayOverride | null =>
  stored === null ? null : { url: stored.url, headers: openReplayHeaders(stored.headers, sealedWith, keyring) }

/** The ids of the keys that sealed stored replays (both tables). */
export const replayKeyIdsInUse = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string }>`
    SELECT DISTINCT sealed_with AS id FROM bulk_actions WHERE sealed_with IS NOT NULL
    UNION SELECT DISTINCT sealed_with FROM replay_overrides WHERE sealed_with IS NOT NULL`
  return rows.map((row) => row.id)
})

/**
 * One chunk of the re-encryption of replay_overrides (as store/sealedRequests.ts triggersResealChunk
 * does for triggers): the next `limit` rows after `afterId` not sealed with the writer key, locked
 * (skipping those a replay writes now), opened and sealed anew.
 */
export const replayOverridesResealChunk = Effect.fnUntraced(function*(input: {
  readonly keyring: Keyring
  readonly afterId: string | null
  readonly limit: number
}) {
  const sql = yield* SqlClient.SqlClient
  const writer = input.keyring.writer
  return yield* sql.withTransaction(Effect.gen(function*() {
    const after = input.afterId === null ? sql`` : sql`AND o.trigger_id > ${input.afterId}`
    const scanned = yield* sql<{ id: string }>`SELECT o.trigger_id AS id FROM replay_overrides o
      WHERE o.sealed_with IS DISTINCT FROM ${writer.id} ${after} ORDER BY o.trigger_id LIMIT ${input.limit}`
    if (scanned.length === 0) return { lastId: null, resealed: 0, skipped: false }
    const ids = scanned.map((row) => row.id)
    const rows = yield* sql<{ id: string; headers: unknown; sealed_with: string | null }>`
      SELECT o.trigger_id AS id, o.headers, o.sealed_with FROM replay_overrides o
      WHERE o.trigger_id = ANY(${ids}::uuid[]) AND o.sealed_with IS DISTINCT FROM ${writer.id} FOR UPDATE SKIP LOCKED`
    if (rows.length > 0) {
      const resealed = rows.map((row) => ({
        id: row.id, headers: sealReplayHeaders(openReplayHeaders(row.headers, row.sealed_with, input.keyring), input.keyring).headers
      }))
      yield* sql`UPDATE replay_overrides o SET headers = to_jsonb(x.headers), sealed_with = ${writer.id}
        FROM jsonb_to_recordset(${JSON.stringify(resealed)}::jsonb) AS x(id uuid, headers text) WHERE o.trigger_id = x.id`
    }
    return { lastId: ids[ids.length - 1]!, resealed: rows.length, skipped: rows.length < ids.length }
  }))
})

/**
 * Re-seals every bulk action's replay not sealed with the writer key (few rows: one statement per
 * action, in one transaction; an action a chunk holds now is skipped, for the next pass). Returns
 * how many were re-sealed and whether some were skipped.
 */
export const bulkActionsResealReplays = Effect.fnUntraced(function*(keyring: Keyring) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(Effect.gen(function*() {
    const rows = yield* sql<{ id: string; replay: { url: string | null; headers: unknown }; sealed_with: string | null }>`
      SELECT id, replay, sealed_with FROM bulk_actions WHERE replay IS NOT NULL AND sealed_with IS DISTINCT FROM ${keyring.writer.id}
      FOR UPDATE SKIP LOCKED`
    const pending = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM bulk_actions
      WHERE replay IS NOT NULL AND sealed_with IS DISTINCT FROM ${keyring.writer.id}`
    for (const row of rows) {
      const stored = storedReplay(openStoredReplay(row.replay, row.sealed_with, keyring), keyring)
      yield* sql`UPDATE bulk_actions SET replay = ${stored.json}::jsonb, sealed_with = ${stored.sealedWith}, replay_key = ${stored.key}
        WHERE id = ${row.id}`
    }
    return { resealed: rows.length, skipped: pending[0]!.n > rows.length }
  }))
})
