// Whether the database answers now, for GET /health (DECISIONS "Faults": while the database cannot be
// reached, /health answers 503 with its usual body). One trivial statement, bounded in time: a
// database that does not answer within PING_TIMEOUT (down, unreachable, or every connection stuck)
// counts as unreachable.
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import { databasePing } from "../store/unavailable.ts"

export const PING_TIMEOUT = "2 seconds"

export const databaseReachable = databasePing.pipe(
  Effect.timeout(PING_TIMEOUT),
  Effect.as(true),
  Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.succeed(false)))
)
