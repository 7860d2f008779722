// The hand-off into delivery: triggers claimed or fired by the scheduler arrive as rows to send;
// triggers moved to `queued` (replayed, or recovered after a crash) are submitted by id. Either way
// this process sends them. Fired triggers (store/shardMarks.ts) are still pending in the database
// until their outcome is recorded, so the dispatcher remembers which it holds: a shard actor never
// hands the same one over twice.
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { ClaimedRow, DeliveryRow } from "../domain/trigger.ts"

export class Dispatcher extends Context.Service<Dispatcher, {
  /** Delivers each trigger (already `queued` in the database) once; returns when they are accepted. */
  readonly submit: (triggerIds: ReadonlyArray<string>) => Effect.Effect<void>
  /** Delivers claimed or fired triggers (see `hold`); returns when they are accepted. */
  readonly deliver: (rows: ReadonlyArray<DeliveryRow>) => Effect.Effect<void>
  /**
   * The same, each at its due time (at once when it has come; never before it): a shard fires a
   * little ahead. A stopping node's drain waits for them.
   */
  readonly deliverAt: (rows: ReadonlyArray<ClaimedRow>) => Effect.Effect<void>
  /**
   * Takes hold of fired rows about to be handed over (their ids are held until their outcome is
   * recorded or they are given back) and returns those not held already.
   */
  readonly hold: <R extends DeliveryRow>(rows: ReadonlyArray<R>) => Array<R>
  /** Whether a fired trigger is held (on its way, or in flight, or its outcome not yet recorded). */
  readonly holds: (triggerId: string) => boolean
  /** Every fired trigger held now. */
  readonly held: () => ReadonlyArray<string>
  /**
   * Whether this node has the trigger in hand: submitted, handed over or waiting at its gates, and
   * its outcome not yet recorded (nor given back). A claim of this node's it does not carry is lost
   * to it (scheduler/unheldClaims.ts).
   */
  readonly carries: (triggerId: string) => boolean
  /**
   * When a fire due at `atMs` should go: a moment up to a few milliseconds later at which none of the
   * rows waiting for their time is due (delivery/earlyRelease.ts quietFrom), or `atMs`.
   */
  readonly quietFrom: (atMs: number) => number
  /** Resolves once fewer than `limit` rows wait for a sender (a large burst is fetched page by page). */
  readonly awaitRoom: (limit: number) => Effect.Effect<void>
  /**
   * A stopping node's last work: sends what it holds and records every outcome, within `timeoutMs`.
   * Past it, attempts still in flight are interrupted (and recorded as such) and triggers not yet
   * started are given back to the scheduler. Returns once every outcome is recorded.
   */
  readonly drain: (timeoutMs: number) => Effect.Effect<void>
}>()("timewheel/Dispatcher") {}

/** The fired triggers a dispatcher holds: `hold`, `holds` and `held` over one set of ids (`release` lets one go). */
export const makeFiredHolds = () => {
  const ids = new Set<string>()
  return {
    hold: <R extends DeliveryRow>(rows: ReadonlyArray<R>): Array<R> => {
      const fresh = rows.filter((row) => !ids.has(row.id))
      for (const row of fresh) ids.add(row.id)
      return fresh
    },
    holds: (id: string) => ids.has(id),
    held: (): ReadonlyArray<string> => [...ids],
    release: (id: string) => void ids.delete(id)
  }
}
