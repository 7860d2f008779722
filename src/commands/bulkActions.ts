// Bulk actions (docs/bulk-actions.md) as use cases for every front end (HTTP, MCP, dashboard):
// a dry run counts the project's triggers matching the filter (the same SQL as GET /jobs); an action
// fixes that set and returns at once with `running` (or `completed` when nothing matched) while the
// nodes' workers act on it in chunks (commands/bulkActionRunner.ts); the same action on the same
// filter while one is running answers that one (calling again after a timeout or a crash resumes it,
// never starts a second); GET reads its progress. Scoped to the project; no quota.
import * as Effect from "effect/Effect"
import { actionView, type BulkActionRequest } from "../domain/bulkAction.ts"
import { NotFound } from "../domain/errors.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import { filterJson } from "../domain/triggerFilter.ts"
import { bulkActionsCount, bulkActionsGet, bulkActionsList, bulkActionsStart } from "../store/bulkActions.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { BulkActionRunner } from "./bulkActionRunner.ts"
import { cursorId, nextCursor } from "./logs.ts"

/** A start that found the same action running, which then finished before it could be read, tries again: this many times. */
const START_ATTEMPTS = 3

export type ActionAnswer =
  | { readonly _tag: "DryRun"; readonly matched: number }
  | { readonly _tag: "Started"; readonly action: ReturnType<typeof actionView> }

/** A dry run's count, or the action started (or the same one already running). */
export const startBulkAction = (projectId: string, request: BulkActionRequest, nowMs: number) =>
  orUnavailable(Effect.gen(function*() {
    if (request.dryRun) {
      return { _tag: "DryRun", matched: yield* bulkActionsCount({ projectId, filter: request.filter }) } satisfies ActionAnswer
    }
    for (let attempt = 1; ; attempt++) {
      const started = yield* bulkActionsStart({
        id: uuidv7(nowMs), projectId, action: request.action, filter: request.filter, filterJson: filterJson(request.filter),
        replay: request.replay, nowMs
      })
      if (started.row === undefined && attempt < START_ATTEMPTS) continue
      if (started.row === undefined) return yield* Effect.die(new Error("a bulk action kept finishing while the same one started"))
      if (started.row.status === "running") yield* (yield* BulkActionRunner).kick
      return { _tag: "Started", action: actionView(started.row) } satisfies ActionAnswer
    }
  }))

/** One action of the project: 404 `Action not found` for malformed, unknown or foreign ids. */
export const getBulkAction = (projectId: string, id: string) =>
  orUnavailable(Effect.gen(function*() {
    const row = isUuid(id) ? yield* bulkActionsGet({ projectId, id: id.toLowerCase() }) : undefined
    if (row === undefined) return yield* Effect.fail(new NotFound("Action not found"))
    return actionView(row)
  }))

/** A page of the project's actions, newest first. */
export const listBulkActions = (projectId: string, page: { readonly limit: number; readonly cursor?: string | undefined }) =>
  orUnavailable(Effect.gen(function*() {
    const olderThanId = yield* cursorId(page.cursor)
    const listed = yield* bulkActionsList({ projectId, limit: page.limit, olderThanId })
    const actions = listed.rows.map(actionView)
    return { actions, nextCursor: nextCursor(listed, actions) }
  }))
