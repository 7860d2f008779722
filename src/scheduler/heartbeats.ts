// Heartbeats of the background loops that GET /health reads (docs/reading.md "GET /health": healthy
// when the scheduler and materializer loops ran in the last 30 s). Each loop beats once per turn. The
// scheduler loop also says whether its last turn reached the database (docs/reading.md, same section:
// while it cannot be reached, /health answers 503), so /health itself never needs a query.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export type LoopName = "scheduler" | "materializer"

export const STALE_AFTER_MS = 30_000

export class Heartbeats extends Context.Service<Heartbeats, {
  readonly beat: (loop: LoopName) => Effect.Effect<void>
  /** Milliseconds since the loop last beat (since the service started when it never did). */
  readonly staleMs: (loop: LoopName) => Effect.Effect<number>
  /** What the scheduler's last turn found: whether the database could be reached. */
  readonly databaseReached: (reached: boolean) => Effect.Effect<void>
  readonly databaseReachable: Effect.Effect<boolean>
}>()("timewheel/Heartbeats") {
  static readonly layer = Layer.effect(Heartbeats, Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    const last = new Map<LoopName, number>()
    let reachable = true
    return Heartbeats.of({
      beat: (loop) => Effect.map(Clock.currentTimeMillis, (now) => void last.set(loop, now)),
      staleMs: (loop) => Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, now - (last.get(loop) ?? startedAt))),
      databaseReached: (reached) => Effect.sync(() => void (reachable = reached)),
      databaseReachable: Effect.sync(() => reachable)
    })
  }))
}
