// Live API keys, remembered: /schedule is called thousands of times a second with the same few keys,
// and a SELECT per call was the largest single cost of a call. A key found live is trusted for
// KEY_CACHE_TTL_MS. Revoking a key (CLI) NOTIFYs every node, which then forgets every remembered key,
// so a revocation takes effect within milliseconds; the TTL bounds the delay should a notification be
// lost (the LISTEN connection reconnecting). Unknown keys are never remembered. Entries are keyed by
// the key's hash, so no clear key stays in memory after its request. A lookup while the database
// cannot be reached fails with ServiceUnavailable (a remembered key still authenticates). The fast
// lane (api/fastLane.ts) asks the same entries synchronously (`rememberedProjectOf`), and hands a key
// it does not find to the Effect routes.
// "Last used" (the dashboard's key list) costs no write per request: the cache notes which keys
// authenticated and writes them in one statement at most once a minute (and when the node stops).
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { apiKeyHashId } from "../domain/auth/apiKey.ts"
import type { ServiceUnavailable } from "../domain/errors.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import { apiKeysFindProject, apiKeysNoteUsed } from "../store/apiKeys.ts"
import type { Database } from "../store/db.ts"
import { KEY_REVOKED_CHANNEL, Notifications } from "../store/notifications.ts"
import { orUnavailable } from "../store/unavailable.ts"

export const KEY_CACHE_TTL_MS = 10_000
const MAX_ENTRIES = 10_000
/** How often the keys used meanwhile get their `last_used_at`. */
export const LAST_USED_FLUSH_MS = 60_000

/** The hash bytes of a hash id (its base64). */
const hashOfId = (id: string): Uint8Array => new Uint8Array(Buffer.from(id, "base64"))

interface Entry {
  readonly projectId: string
  readonly expiresAtMs: number
}

export class ApiKeyCache extends Context.Service<ApiKeyCache, {
  /** The project of the live key, if any. */
  readonly projectOf: (key: string) => Effect.Effect<string | undefined, ServiceUnavailable>
  /** The project of the key when it is remembered and live; undefined otherwise (unknown, or not remembered). */
  readonly rememberedProjectOf: (key: string) => string | undefined
}>()("timewheel/ApiKeyCache") {
  static readonly layer = Layer.effect(ApiKeyCache, Effect.gen(function*() {
    const services = yield* Effect.context<Database>()
    const notifications = yield* Notifications
    const clock = yield* Clock.Clock
    const entries = new Map<string, Entry>()

    const forgetOnRevocation = Effect.scoped(Effect.gen(function*() {
      const nextRevocation = yield* notifications.listen(KEY_REVOKED_CHANNEL)
      entries.clear() // whatever was revoked while not listening
      for (;;) {
        yield* nextRevocation
        entries.clear()
      }
    }))
    yield* forkLoop("key revocation listener", forgetOnRevocation)

    /** Keys that authenticated since the last flush, by the base64 of their hash. */
    let used = new Set<string>()
    const flushUsed = Effect.suspend(() => {
      if (used.size === 0) return Effect.void
      const hashes = [...used].map(hashOfId)
      used = new Set()
      return Effect.provideContext(apiKeysNoteUsed({ hashes, atMs: clock.currentTimeMillisUnsafe() }), services)
    })
    yield* forkLoop("key last-used writer", Effect.andThen(Effect.sleep(LAST_USED_FLUSH_MS), flushUsed))
    yield* Effect.addFinalizer(() => Effect.ignore(flushUsed))

    /** The project of the remembered live entry of this hash id, noting its use. */
    const remembered = (id: string): string | undefined => {
      const entry = entries.get(id)
      if (entry === undefined || entry.expiresAtMs <= clock.currentTimeMillisUnsafe()) return undefined
      used.add(id)
      return entry.projectId
    }

    return ApiKeyCache.of({
      rememberedProjectOf: (key) => remembered(apiKeyHashId(key)),
      projectOf: (key) => {
        const id = apiKeyHashId(key)
        const projectId = remembered(id)
        if (projectId !== undefined) return Effect.succeed(projectId)
        const lookup = orUnavailable(Effect.provideContext(apiKeysFindProject(hashOfId(id)), services))
        return Effect.map(Effect.catchIf(lookup, (error) => error._tag !== "ServiceUnavailable", Effect.die), (projectId) => {
          if (projectId === undefined) entries.delete(id)
          else {
            used.add(id)
            if (entries.size >= MAX_ENTRIES) entries.clear()
            entries.set(id, { projectId, expiresAtMs: clock.currentTimeMillisUnsafe() + KEY_CACHE_TTL_MS })
          }
          return projectId
        })
      }
    })
  }))
}
