// GET /health: the heartbeats of the scheduler and materializer loops (docs/reading.md
// "GET /health": 200 when both ran in the last 30 s, else 503 with status "stale"), and whether the
// scheduler's last turn (every second) reached the database (docs/internals.md "Fine print": while it cannot be
// reached, 503 with the same body and status "unavailable", never a 500 — also when the key cannot
// be looked up for that reason). It sends no query of its own.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { Heartbeats, STALE_AFTER_MS } from "../scheduler/heartbeats.ts"
import { authenticate } from "./auth.ts"
import { handle } from "./handle.ts"
import { jsonResponse } from "./errors.ts"
import { jsonResponseOf, KEY_BEARER_OR_SESSION, type Paths, unauthorized } from "./openapi/parts.ts"

export const healthBody = Effect.gen(function*() {
  const heartbeats = yield* Heartbeats
  const schedulerStaleMs = yield* heartbeats.staleMs("scheduler")
  const materializerStaleMs = yield* heartbeats.staleMs("materializer")
  const healthy = schedulerStaleMs <= STALE_AFTER_MS && materializerStaleMs <= STALE_AFTER_MS
  return { status: healthy ? "ok" : "stale", schedulerStaleMs, materializerStaleMs }
})

/** The body while the database cannot be reached: the loops' ages as usual, status "unavailable". */
const unavailableBody = Effect.map(healthBody, (body) => ({ ...body, status: "unavailable" }))

/**
 * The answer once the caller is known: authenticated, or not for want of the database (then the
 * "unavailable" body). It never fails; the fast lane (fastLane.ts) runs it for a remembered key.
 */
export const healthAnswer = (authenticated: boolean) =>
  Effect.gen(function*() {
    const body = authenticated && (yield* (yield* Heartbeats).databaseReachable) ? yield* healthBody : yield* unavailableBody
    return jsonResponse(body.status === "ok" ? 200 : 503, body)
  })

export const HealthRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/health", handle(Effect.gen(function*() {
    const authenticated = yield* authenticate(yield* HttpServerRequest.HttpServerRequest).pipe(
      Effect.as(true),
      Effect.catchTag("ServiceUnavailable", () => Effect.succeed(false))
    )
    return yield* healthAnswer(authenticated)
  })))
}))

const healthSchema = {
  type: "object",
  required: ["status", "schedulerStaleMs", "materializerStaleMs"],
  properties: {
    status: {
      type: "string",
      enum: ["ok", "stale", "unavailable"],
      description: "`ok` when healthy; `stale` when a loop has not run for 30 s; `unavailable` while the database cannot be reached."
    },
    schedulerStaleMs: { type: "integer", description: "Milliseconds since the scheduler loop last ran." },
    materializerStaleMs: { type: "integer", description: "Milliseconds since the materializer loop last ran." }
  }
}

export const healthPaths = (): Paths => ({
  "/health": {
    get: {
      operationId: "health",
      summary: "Liveness and readiness probe",
      description: "Checks the scheduler and materializer loops (`ok` when both ran in the last 30 s) and that the scheduler reached the database in its last turn (every second).",
      security: KEY_BEARER_OR_SESSION,
      responses: {
        200: jsonResponseOf("Both loops ran in the last 30 seconds.", healthSchema),
        401: unauthorized,
        503: jsonResponseOf("A loop has not run for more than 30 seconds, or the database cannot be reached.", healthSchema)
      }
    }
  }
})
