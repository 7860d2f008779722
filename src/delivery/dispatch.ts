// The hand-off into delivery: triggers claimed by the scheduler arrive as rows already `running`;
// triggers moved to `queued` (replayed, or recovered after a crash) are submitted by id. Either way
// this process sends them.
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { DeliveryRow } from "../domain/trigger.ts"

export class Dispatcher extends Context.Service<Dispatcher, {
  /** Delivers each trigger (already `queued` in the database) once; returns when they are accepted. */
  readonly submit: (triggerIds: ReadonlyArray<string>) => Effect.Effect<void>
  /** Delivers claimed triggers (already `running`, attempt counted); returns when they are accepted. */
  readonly deliver: (rows: ReadonlyArray<DeliveryRow>) => Effect.Effect<void>
  /**
   * A stopping node's last work: sends what it holds and records every outcome, within `timeoutMs`.
   * Past it, attempts still in flight are interrupted (and recorded as such) and triggers not yet
   * started are given back to the scheduler. Returns once every outcome is recorded.
   */
  readonly drain: (timeoutMs: number) => Effect.Effect<void>
}>()("timewheel/Dispatcher") {}
