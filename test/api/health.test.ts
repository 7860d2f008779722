// GET /health's body under TestClock (docs/reading.md "GET /health": "ok" while the scheduler and
// materializer loops ran in the last 30 s, else "stale" — the endpoint then answers 503).
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import { healthBody } from "../../src/api/health.ts"
import { Heartbeats } from "../../src/scheduler/heartbeats.ts"

it.effect("ok while both loops beat within 30 s; stale once either stops", () =>
  Effect.gen(function*() {
    const heartbeats = yield* Heartbeats
    yield* heartbeats.beat("scheduler")
    yield* heartbeats.beat("materializer")
    yield* TestClock.adjust(30_000)
    assert.deepStrictEqual(yield* healthBody, { status: "ok", schedulerStaleMs: 30_000, materializerStaleMs: 30_000 })
    yield* heartbeats.beat("scheduler")
    yield* TestClock.adjust(1)
    assert.deepStrictEqual(yield* healthBody, { status: "stale", schedulerStaleMs: 1, materializerStaleMs: 30_001 })
    yield* heartbeats.beat("materializer")
    assert.deepStrictEqual(yield* healthBody, { status: "ok", schedulerStaleMs: 1, materializerStaleMs: 0 })
  }).pipe(Effect.provide(Heartbeats.layer)))

it.effect("a loop that never ran is stale from the start of the service", () =>
  Effect.gen(function*() {
    yield* TestClock.adjust(30_001)
    assert.deepStrictEqual(yield* healthBody, { status: "stale", schedulerStaleMs: 30_001, materializerStaleMs: 30_001 })
  }).pipe(Effect.provide(Heartbeats.layer)))
