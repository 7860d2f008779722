// Live API keys, remembered: /schedule is called thousands of times a second with the same few keys,
// and a SELECT per call was the largest single cost of a call. A key found live is trusted for
// KEY_CACHE_TTL_MS. Revoking a key (CLI) NOTIFYs every node, which then forgets every remembered key,
// so a revocation takes effect within milliseconds; the TTL bounds the delay should a notification be
// lost (the LISTEN connection reconnecting). Unknown keys are never remembered. Entries are keyed by
// the key's hash, so no clear key stays in memory after its request.
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import { SqlClient } from "effect/sql"
import { apiKeysFindProject, KEY_REVOKED_CHANNEL } from "../store/apiKeys.ts"

export const KEY_CACHE_TTL_MS = 10_000
const MAX_ENTRIES = 10_000

interface Entry {
  readonly projectId: string
  readonly expiresAtMs: number
}

export class ApiKeyCache extends Context.Service<ApiKeyCache, {
  /** The project of the live key with this SHA-256 hash, if any. */
  readonly projectOf: (hash: Uint8Array) => Effect.Effect<string | undefined>
}>()("timewheel/ApiKeyCache") {
  static readonly layer = Layer.effect(ApiKeyCache, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const clock = yield* Clock.Clock
    const entries = new Map<string, Entry>()

    const forgetOnRevocation = Effect.gen(function*() {
      const revocations = yield* pg.listen(KEY_REVOKED_CHANNEL)
      entries.clear() // whatever was revoked while not listening
      for (;;) {
        yield* Queue.take(revocations)
        entries.clear()
      }
    }).pipe(
      Effect.scoped,
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("LISTEN for key revocations failed; reconnecting", cause)
      ),
      Effect.repeat(Schedule.spaced("1 second"))
    )
    yield* Effect.forkScoped(forgetOnRevocation)

    return ApiKeyCache.of({
      projectOf: (hash) => {
        const id = Buffer.from(hash).toString("base64")
        const entry = entries.get(id)
        if (entry !== undefined && entry.expiresAtMs > clock.currentTimeMillisUnsafe()) return Effect.succeed(entry.projectId)
        return Effect.map(Effect.orDie(Effect.provideService(apiKeysFindProject(hash), SqlClient.SqlClient, sql)), (projectId) => {
          if (projectId === undefined) entries.delete(id)
          else {
            if (entries.size >= MAX_ENTRIES) entries.clear()
            entries.set(id, { projectId, expiresAtMs: clock.currentTimeMillisUnsafe() + KEY_CACHE_TTL_MS })
          }
          return projectId
        })
      }
    })
  }))
}
