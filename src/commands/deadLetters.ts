// The triggers of a project that end in a dead letter now (store/deadLetters.ts), as the dashboard's
// Dead letters page shows them: each with its title, status, attempt count and its last attempt
// (when, the HTTP status or error, the start of the response), newest dead letter first, with how
// many there are in all; the overview counts the same set. A trigger replayed with success since is
// not listed; one being replayed (queued or running again) is, with that status.
import * as Effect from "effect/Effect"
import { deadLettersCount, deadLettersList, type DeadLetterRow } from "../store/deadLetters.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { cursorId, nextCursor } from "./logs.ts"
import type { DeadLetterView } from "../domain/responses.ts"

export type { DeadLetterView }

const viewOf = (row: DeadLetterRow): DeadLetterView => ({
  id: row.id,
  kind: row.kind,
  generatorId: row.generator_id,
  status: row.status,
  method: row.method,
  url: row.url,
  title: row.title,
  tags: row.tags,
  customKey: row.custom_key,
  attempts: row.attempts,
  lastAttempt: {
    id: row.execution_id,
    attempt: row.attempt,
    finishedAt: row.finished_at.toISOString(),
    httpStatus: row.http_status,
    errorKind: row.error_kind,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    responseExcerpt: row.response_excerpt,
    url: row.execution_url,
    triggeredBy: row.triggered_by
  }
})

/** How many of the project's triggers end in a dead letter now. */
export const countDeadLetters = (projectId: string) => orUnavailable(deadLettersCount({ projectId }))

/** A page of them (`cursor`: the previous page's `nextCursor`), with the count of all of them. */
export const listDeadLetters = (projectId: string, options: { readonly limit: number; readonly cursor?: string | undefined }) =>
  orUnavailable(Effect.gen(function*() {
    const olderThanExecutionId = yield* cursorId(options.cursor)
    const rows = yield* deadLettersList({ projectId, olderThanExecutionId, limit: options.limit })
    const page = rows.slice(0, options.limit)
    const cursor = nextCursor({ more: rows.length > options.limit }, page.map((row) => ({ id: row.execution_id })))
    const count = yield* deadLettersCount({ projectId })
    return { count, triggers: page.map(viewOf), nextCursor: cursor }
  }))
