// Which triggers pass an origin's gate (gates/targetPolicyCache.ts; docs/protecting-targets.md "How
// the limits hold"): rows of a project without target policies come back untouched — the same array,
// no lookup, no URL read; with policies, a row whose URL's origin has one (or under `*`) gets the
// origin's gate after its tags' gates, others do not; a project whose policies change (a
// notification) is read again at once.
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { DeliveryRow } from "../../src/domain/trigger.ts"
import { TargetPolicyCache } from "../../src/gates/targetPolicyCache.ts"
import { Notifications, TARGET_POLICIES_CHANGED_CHANNEL } from "../../src/store/notifications.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, nextId } from "../support/fixtures.ts"

const row = (projectId: string, url: string, gateTags: ReadonlyArray<string> = []): DeliveryRow => ({
  id: nextId(), shard: 0, generatorId: null, projectId, url, method: "POST", headers: [], body: null, contentType: null, tags: gateTags,
  attempt: 1, retry: null, projectRetry: null, triggeredBy: null, signingSecrets: [], gateTags, scheduledAtMs: null, fired: null,
  traceparent: null, tracestate: null
})

const policy = (projectId: string, origin: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO target_policies (id, project_id, origin, max_concurrent, created_at, updated_at)
    VALUES (${nextId()}, ${projectId}, ${origin}, 5, now(), now())`)

const project = Effect.gen(function*() {
  const id = nextId()
  yield* ensureProject(id)
  return id
})

const Env = Layer.provideMerge(TargetPolicyCache.layer, Layer.merge(TestDatabase, Notifications.memory))

layer(Env, { timeout: "60 seconds", excludeTestServices: true })("target policy cache", (it) => {
  it.effect("a project without target policies: the same rows back; with them, the origin's gate for covered origins only", () =>
    Effect.gen(function*() {
      const cache = yield* TargetPolicyCache
      const notifications = yield* Notifications
      const plain = yield* project
      const rows = [row(plain, "https://api.example.com/a"), row(plain, "http://127.0.0.1:9/b", ["billing"])]
      assert.strictEqual(yield* cache.withOriginGates(rows), rows, "untouched: the very same array")

      const limited = yield* project
      yield* policy(limited, "https://api.example.com")
      yield* notifications.send(TARGET_POLICIES_CHANGED_CHANNEL, limited)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      const gated = yield* cache.withOriginGates([
        row(limited, "https://API.example.com:443/hooks?x=1", ["billing"]),
        row(limited, "https://other.example.com/"),
        row(plain, "https://api.example.com/a")
      ])
      assert.deepStrictEqual(gated.map((r) => r.gateTags), [["billing", "https://api.example.com"], [], []])

      // `*` covers every origin of its project
      yield* policy(limited, "*")
      yield* notifications.send(TARGET_POLICIES_CHANGED_CHANNEL, limited)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      const all = yield* cache.withOriginGates([row(limited, "https://other.example.com/"), row(limited, "not a url")])
      assert.deepStrictEqual(all.map((r) => r.gateTags), [["https://other.example.com"], []])
    }))
})
