// Heartbeats of the background loops that GET /health reads (DECISIONS "Other endpoints": healthy
// when the scheduler and materializer loops ran in the last 30 s). Each loop beats once per turn.
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
}>()("timewheel/Heartbeats") {
  static readonly layer = Layer.effect(Heartbeats, Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    const last = new Map<LoopName, number>()
    return Heartbeats.of({
      beat: (loop) => Effect.map(Clock.currentTimeMillis, (now) => void last.set(loop, now)),
      staleMs: (loop) => Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, now - (last.get(loop) ?? startedAt)))
    })
  }))
}
