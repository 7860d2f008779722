// What `npm start` tells a newcomer to do next (docs/operations.md "Starting"), in one statement: the
// oldest project's name, whether any key is live, whether any dashboard administrator exists.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { SetupState } from "../domain/firstSteps.ts"

export const setupStateRead = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ first_project: string | null; has_live_key: boolean; has_admin: boolean }>`
    SELECT (SELECT name FROM projects ORDER BY created_at, id LIMIT 1) AS first_project,
      EXISTS (SELECT FROM api_keys WHERE revoked_at IS NULL) AS has_live_key,
      EXISTS (SELECT FROM admins) AS has_admin`
  return { firstProject: row!.first_project, hasLiveKey: row!.has_live_key, hasAdmin: row!.has_admin } satisfies SetupState
})
