// Patching the project default retry policy (PUT /project/retry-policy) in one statement: the
// validated fields are merged into the stored jsonb (`||`), so two concurrent patches of different
// fields both survive (a read-modify-write would lose one). Reading it is projectsGetRetryPolicy.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

/** Merges `fields` (API field names) into the stored policy; the whole policy after the merge. */
export const projectsPatchRetryPolicy = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly fields: Readonly<Record<string, unknown>>
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ retry_policy: unknown }>`
    UPDATE projects
    SET retry_policy = retry_policy || ${JSON.stringify(input.fields)}::jsonb, updated_at = ${new Date(input.nowMs)}
    WHERE id = ${input.projectId}
    RETURNING retry_policy`
  return rows[0]?.retry_policy
})
