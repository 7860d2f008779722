// "Last used" of API keys costs no write per request (docs/dashboard.md): the node's key cache notes
// the keys that authenticated and writes them in one statement once a minute, and when the node stops.
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { ApiKeyCache } from "../../src/commands/apiKeyCache.ts"
import { hashApiKey } from "../../src/domain/auth/apiKey.ts"
import { Notifications } from "../../src/store/notifications.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, nextId } from "../support/fixtures.ts"
import { pollUntil } from "../support/wait.ts"

const lastUsed = (key: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ last_used_at: Date | null }>`SELECT last_used_at FROM api_keys WHERE key_hash = ${hashApiKey(key)}`, (rows) => rows[0]!.last_used_at))

const newKey = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const projectId = nextId()
  yield* ensureProject(projectId)
  const key = `ttr_${nextId().replace(/-/g, "")}abcdefghijklmnop`
  yield* sql`INSERT INTO api_keys (id, project_id, key_hash, key_hint, created_at) VALUES (${nextId()}, ${projectId}, ${hashApiKey(key)}, 'ttr_…x', now())`
  return { key, projectId }
})

layer(Layer.mergeAll(TestDatabase, Notifications.memory), { timeout: "60 seconds" })("key last used", (it) => {
  it.effect("written once a minute for every key used meanwhile, and when the cache stops; never per request", () =>
    Effect.gen(function*() {
      const used = yield* newKey
      const unused = yield* newKey
      yield* Effect.scoped(Effect.gen(function*() {
        const cache = Context.get(yield* Layer.build(ApiKeyCache.layer), ApiKeyCache)
        const projectOf = (key: string) => cache.projectOf(key)
        for (let i = 0; i < 5; i++) assert.strictEqual(yield* projectOf(used.key), used.projectId)
        assert.isNull(yield* lastUsed(used.key)) // nothing written per request
        yield* TestClock.adjust("61 seconds")
        // the minute's write runs on its own fiber: wait for it to land rather than for a time
        yield* pollUntil("the minute's write of last use", Effect.map(lastUsed(used.key), (at) => at ?? undefined))
        assert.isNull(yield* lastUsed(unused.key))
        yield* projectOf(unused.key)
      }))
      assert.isNotNull(yield* lastUsed(unused.key)) // flushed as the cache stopped
    }))
})
