// What a bulk replay's attempts send instead of their stored URL and headers (migration 8 in store/migrations,
// written by store/triggerReplay.ts; the headers sealed with ENCRYPTION_KEYS: store/sealedReplays.ts).
// Read by delivery for the replayed triggers it is about to send.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { ReplayOverride } from "../domain/replayOverride.ts"
import { EncryptionKeys } from "./sealedRequests.ts"
import { openReplayHeaders } from "./sealedReplays.ts"

/** The overrides of these triggers, by trigger id (most have none). */
export const replayOverridesFor = Effect.fnUntraced(function*(ids: ReadonlyArray<string>) {
  if (ids.length === 0) return new Map<string, ReplayOverride>()
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ trigger_id: string; url: string | null; headers: unknown; sealed_with: string | null }>`
    SELECT trigger_id, url, headers, sealed_with FROM replay_overrides WHERE trigger_id = ANY(${ids}::uuid[])`
  const keys = yield* EncryptionKeys
  return new Map(rows.map((row) => [row.trigger_id, { url: row.url, headers: openReplayHeaders(row.headers, row.sealed_with, keys) }]))
})
