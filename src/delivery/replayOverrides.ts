// The one step delivery takes for bulk replays (docs/bulk-actions.md "The request": the URL and added
// headers of `replay` for that attempt only): before rows are sent, those of replayed attempts
// (`triggeredBy` `retry`) get their override, if their replay wrote one (store/replayOverrides.ts).
// Rows of any other attempt are passed through without a query. Read until the database answers: a
// replay must not go to the stored URL by mistake.
import * as Effect from "effect/Effect"
import { applyReplayOverride } from "../domain/replayOverride.ts"
import type { DeliveryRow } from "../domain/trigger.ts"
import { retryUntilDone } from "../lib/backgroundLoop.ts"
import { replayOverridesFor } from "../store/replayOverrides.ts"

/** A replayed attempt: its replay may have written an override (the only rows `withReplayOverrides` reads for). */
export const mayHaveReplayOverride = (row: DeliveryRow): boolean => row.triggeredBy === "retry"

export const withReplayOverrides = <Row extends DeliveryRow>(rows: ReadonlyArray<Row>) =>
  Effect.gen(function*() {
    const replayed = rows.filter(mayHaveReplayOverride).map((row) => row.id)
    if (replayed.length === 0) return rows
    const overrides = yield* retryUntilDone("reading replay overrides", replayOverridesFor(replayed))
    if (overrides.size === 0) return rows
    return rows.map((row): Row => {
      const override = overrides.get(row.id)
      return override === undefined || !mayHaveReplayOverride(row) ? row : { ...row, ...applyReplayOverride(row, override) }
    })
  })
