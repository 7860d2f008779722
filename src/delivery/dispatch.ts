// The hand-off into delivery: triggers that were moved to `queued` in the database (claimed by the
// scheduler, replayed, or recovered after a crash) are submitted here by id and sent by this process.
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

export class Dispatcher extends Context.Service<Dispatcher, {
  /** Delivers each trigger (already `queued` in the database) once; returns when they are accepted. */
  readonly submit: (triggerIds: ReadonlyArray<string>) => Effect.Effect<void>
}>()("timewheel/Dispatcher") {}
