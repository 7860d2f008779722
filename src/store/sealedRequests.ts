// Encryption at rest of the stored requests (ENCRYPTION_KEYS, domain/sealing.ts): what a write stores
// of a trigger's headers and body (`sealRequest`: plain, or sealed with the writer key, its id in
// `sealed_with`), and the ONE function that turns a stored row back into plain headers and body
// (`openStoredRequest`), applied wherever rows are decoded: for delivery, GET /jobs and the dashboard,
// and the diffs of /declare and /bulk. Sealed headers are a JSON string (base64) in the jsonb column,
// a sealed body the sealed bytes. Also: the key ids in use (checked at start) and the re-encryption of
// `keys rotate-encryption`, chunk by chunk in short transactions.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { SqlClient } from "effect/sql"
import {
  type EncryptionKey, EncryptionKeysMissing, keyFor, type Keyring, openBytes, openPrefix, SEAL_OVERHEAD, sealBytes,
  sealedPrefixBytes
} from "../domain/sealing.ts"
import type { HeaderPairs } from "../domain/trigger.ts"
import { replayKeyIdsInUse } from "./sealedReplays.ts"

/** The keys of ENCRYPTION_KEYS; null (the default) when it is unset: values are written plain. */
export const EncryptionKeys = Context.Reference<Keyring | null>("timewheel/EncryptionKeys", { defaultValue: () => null })

/** A definition's headers and body as a write stores them. */
export interface SealedRequest {
  /** The jsonb value: the `[[name, value], …]` pairs, or (sealed) the base64 of the sealed pairs. */
  readonly headers: HeaderPairs | string
  readonly body: Uint8Array | null
  /** The id of the key that sealed both; null: stored plain. */
  readonly sealedWith: string | null
}

const sealWith = (key: EncryptionKey, headers: HeaderPairs, body: Uint8Array | null): SealedRequest => ({
  headers: sealBytes(key, "headers", Buffer.from(JSON.stringify(headers))).toString("base64"),
  body: body === null ? null : sealBytes(key, "body", body),
  sealedWith: key.id
})

/** What a write stores: plain without keys, else sealed with the writer key (the first of ENCRYPTION_KEYS). */
export const sealRequest = (headers: HeaderPairs, body: Uint8Array | null, keyring: Keyring | null): SealedRequest =>
  keyring === null ? { headers, body, sealedWith: null } : sealWith(keyring.writer, headers, body)

/** The stored columns `openStoredRequest` reads. */
export interface StoredRequestColumns {
  readonly headers: unknown
  readonly body: Uint8Array | null
  readonly sealed_with: string | null
  /** Set by a list that read only a prefix of a large body (triggerReads.ts): the prefix is opened. */
  readonly body_truncated?: boolean
}

export type Opened<R extends StoredRequestColumns> = Omit<R, "headers" | "body"> & {
  readonly headers: HeaderPairs
  readonly body: Uint8Array | null
}

/**
 * A stored row with its headers and body plain: the row itself when it was stored plain (nothing
 * allocated), else a copy with them opened. Throws SealedValueError (a clear message naming the key)
 * when its key is not in ENCRYPTION_KEYS or the value was altered; the start refuses to run with a
 * key missing for existing rows (`sealedKeyIdsInUse`), so that is a misconfigured node, not data.
 */
export const openStoredRequest = <R extends StoredRequestColumns>(row: R, keyring: Keyring | null): Opened<R> => {
  if (row.sealed_with === null) return row as unknown as Opened<R>
  const key = keyFor(keyring, row.sealed_with)
  const headers = JSON.parse(openBytes(key, "headers", Buffer.from(row.headers as string, "base64")).toString("utf8")) as HeaderPairs
  const body = row.body === null ? null : row.body_truncated === true ? openPrefix(key, row.body) : openBytes(key, "body", row.body)
  return { ...row, headers, body }
}

/** SQL over the alias `t`: the plain size of the stored body (its sealed size less the overhead). */
export const plainBodySizeSql = (sql: SqlClient.SqlClient) =>
  sql`(octet_length(t.body) - CASE WHEN t.sealed_with IS NULL THEN 0 ELSE ${SEAL_OVERHEAD} END)`

/** SQL over the alias `t`: the stored bytes holding the first `n` bytes of the plain body. */
export const bodyPrefixSql = (sql: SqlClient.SqlClient, n: number) =>
  sql`substring(t.body FROM 1 FOR CASE WHEN t.sealed_with IS NULL THEN ${n} ELSE ${sealedPrefixBytes(n)} END)`

/**
 * The ids of the keys that sealed stored triggers: a skip scan of the partial index
 * triggers_sealed_with, one probe per distinct id, however many rows.
 */
export const sealedKeyIdsInUse = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string }>`
    WITH RECURSIVE ids AS (
      (SELECT sealed_with AS id FROM triggers WHERE sealed_with IS NOT NULL ORDER BY sealed_with LIMIT 1)
      UNION ALL
      SELECT (SELECT t.sealed_with FROM triggers t WHERE t.sealed_with > ids.id ORDER BY t.sealed_with LIMIT 1)
      FROM ids WHERE ids.id IS NOT NULL
    )
    SELECT id FROM ids WHERE id IS NOT NULL`
  return rows.map((row) => row.id)
})

/**
 * Fails with EncryptionKeysMissing when stored triggers (or the headers of stored replays:
 * store/sealedReplays.ts) are sealed with a key the keyring lacks.
 */
export const refuseMissingKeys = (keyring: Keyring | null) =>
  Effect.gen(function*() {
    const inUse = new Set([...yield* sealedKeyIdsInUse, ...yield* replayKeyIdsInUse])
    const missing = [...inUse].filter((id) => keyring?.byId.has(id) !== true)
    if (missing.length > 0) return yield* Effect.fail(new EncryptionKeysMissing(missing, keyring !== null))
  })

/**
 * The keys for the store functions, once the database holds nothing sealed with a key they lack (a
 * clear error at start rather than failed reads and deliveries later).
 */
export const encryptionKeysLayer = (keyring: Keyring | null) =>
  Layer.effect(EncryptionKeys, Effect.as(refuseMissingKeys(keyring), keyring))

/**
 * One chunk of the re-encryption: in one short transaction, the next `limit` triggers after `afterId`
 * (in id order) not sealed with the writer key, locked (skipping rows a claim or a write holds now:
 * the next pass takes them), opened and sealed anew with the writer key. Returns the last id looked
 * at (null: the end of the table), how many were re-sealed, and whether some were skipped.
 */
export const triggersResealChunk = Effect.fnUntraced(function*(input: {
  readonly keyring: Keyring
  readonly afterId: string | null
  readonly limit: number
}) {
  const sql = yield* SqlClient.SqlClient
  const writer = input.keyring.writer
  return yield* sql.withTransaction(Effect.gen(function*() {
    const after = input.afterId === null ? sql`` : sql`AND t.id > ${input.afterId}`
    const scanned = yield* sql<{ id: string }>`
      SELECT t.id FROM triggers t WHERE t.sealed_with IS DISTINCT FROM ${writer.id} ${after}
      ORDER BY t.id LIMIT ${input.limit}`
    if (scanned.length === 0) return { lastId: null, resealed: 0, skipped: false }
    const ids = scanned.map((row) => row.id)
    const rows = yield* sql<{ id: string; headers: unknown; body: Uint8Array | null; sealed_with: string | null }>`
      SELECT t.id, t.headers, t.body, t.sealed_with FROM triggers t
      WHERE t.id = ANY(${ids}::uuid[]) AND t.sealed_with IS DISTINCT FROM ${writer.id}
      FOR UPDATE SKIP LOCKED`
    if (rows.length > 0) {
      const resealed = rows.map((row) => {
        const plain = openStoredRequest(row, input.keyring)
        const sealed = sealWith(writer, plain.headers, plain.body)
        return {
          id: row.id,
          headers: sealed.headers,
          body: sealed.body === null ? null : Buffer.from(sealed.body).toString("base64")
        }
      })
      // (the digest /declare stored is cleared: made under the old key, migration 20)
      yield* sql`UPDATE triggers t SET headers = to_jsonb(x.headers), body = decode(x.body, 'base64'), sealed_with = ${writer.id},
          item_digest = NULL
        FROM jsonb_to_recordset(${JSON.stringify(resealed)}::jsonb) AS x(id uuid, headers text, body text)
        WHERE t.id = x.id`
    }
    return { lastId: ids[ids.length - 1]!, resealed: rows.length, skipped: rows.length < ids.length }
  }))
})
