// Which triggers pass an origin's gate (gates/targetPolicyCache.ts; docs/protecting-targets.md "How
// the limits hold"): rows of a project without target policies come back untouched — the same array,
// no lookup, no URL read; with policies, a row whose URL's origin has one (or under `*`) gets the
// origin's gate after its tags' gates, others do not; a project whose policies change (a
// notification) is read again at once; a read that began before a change never replaces it.
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { DeliveryRow } from "../../src/domain/trigger.ts"
import { TargetPolicyCache, type TargetPolicyReads } from "../../src/gates/targetPolicyCache.ts"
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

// A read that began before a change was heard and came back after it (a slow query) must not replace
// what the change says: neither the set of projects with target policies (read every 10 s) nor a
// project's policies.
const slowReads = Effect.gen(function*() {
  const projectsGate = yield* Deferred.make<void>()
  const originsGate = yield* Deferred.make<void>()
  const state = { projectReads: 0, originReads: 0, projectIds: [] as Array<string>, origins: new Map<string, Array<string>>() }
  const reads: TargetPolicyReads = {
    // the first read (at start) answers at once; the next (the loop's) only when the test lets it
    projects: Effect.suspend(() => {
      const snapshot = [...state.projectIds]
      return ++state.projectReads === 1 ? Effect.succeed(snapshot) : Effect.as(Deferred.await(projectsGate), snapshot)
    }),
    // a project's first read waits for the test, with what was true when it began
    origins: (projectId) =>
      Effect.suspend(() => {
        const snapshot = [...(state.origins.get(projectId) ?? [])]
        return ++state.originReads === 1 ? Effect.as(Deferred.await(originsGate), snapshot) : Effect.succeed(snapshot)
      })
  }
  return { projectsGate, originsGate, state, reads }
})

describe("target policy cache: stale reads", () => {
  it.live("a read of the projects that began before a create does not drop the created project", () =>
    Effect.gen(function*() {
      const { originsGate, projectsGate, reads, state } = yield* slowReads
      yield* Deferred.succeed(originsGate, undefined) // only the projects' read is slow here
      const project = "00000000-0000-4000-8000-0000000000a1"
      const check = Effect.gen(function*() {
        const cache = yield* TargetPolicyCache
        const notifications = yield* Notifications
        yield* Effect.sleep("50 millis") // the loop's read has begun (and waits)
        state.projectIds.push(project)
        state.origins.set(project, ["*"])
        yield* notifications.send(TARGET_POLICIES_CHANGED_CHANNEL, project)
        yield* Effect.sleep("50 millis")
        yield* Deferred.succeed(projectsGate, undefined) // the stale read comes back
        yield* Effect.sleep("50 millis")
        const out = yield* cache.withOriginGates([row(project, "https://api.example.com/a")])
        assert.deepStrictEqual(out.map((r) => r.gateTags), [["https://api.example.com"]])
      })
      yield* check.pipe(Effect.provide(Layer.provideMerge(TargetPolicyCache.layerWith(reads), Layer.merge(TestDatabase, Notifications.memory))))
    }), { timeout: 60_000 })

  it.live("a project's read that began before a change is used once, not remembered", () =>
    Effect.gen(function*() {
      const { originsGate, reads, state } = yield* slowReads
      const project = "00000000-0000-4000-8000-0000000000a2"
      state.projectIds.push(project)
      const check = Effect.gen(function*() {
        const cache = yield* TargetPolicyCache
        const notifications = yield* Notifications
        const url = "https://api.example.com/a"
        const first = yield* Effect.forkChild(cache.withOriginGates([row(project, url)]))
        yield* Effect.sleep("50 millis")
        state.origins.set(project, ["*"])
        yield* notifications.send(TARGET_POLICIES_CHANGED_CHANNEL, project)
        yield* Effect.sleep("50 millis")
        yield* Deferred.succeed(originsGate, undefined)
        const stale = yield* Fiber.join(first)
        assert.deepStrictEqual(stale.map((r) => r.gateTags), [[]], "what was true when the read began")
        const out = yield* cache.withOriginGates([row(project, url)])
        assert.deepStrictEqual(out.map((r) => r.gateTags), [["https://api.example.com"]])
      })
      yield* check.pipe(Effect.provide(Layer.provideMerge(TargetPolicyCache.layerWith(reads), Layer.merge(TestDatabase, Notifications.memory))))
    }), { timeout: 60_000 })
})
