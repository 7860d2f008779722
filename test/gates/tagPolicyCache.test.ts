// The tag policies each node remembers (gates/tagPolicyCache.ts): a project's read that began before
// a change of its policies was heard, and came back after it, is used once and not remembered; the
// next use reads again.
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import type { StoredTagPolicy } from "../../src/domain/tagPolicy.ts"
import { TagPolicyCache } from "../../src/gates/tagPolicyCache.ts"
import { Notifications, TAG_POLICIES_CHANGED_CHANNEL } from "../../src/store/notifications.ts"
import { TestDatabase } from "../support/database.ts"

describe("tag policy cache: stale reads", () => {
  it.live("a read that began before a change does not hide the change", () =>
    Effect.gen(function*() {
      const project = "00000000-0000-4000-8000-0000000000b1"
      const gate = yield* Deferred.make<void>()
      let stored: ReadonlyArray<StoredTagPolicy> = []
      let reads = 0
      const read = (_projectId: string) =>
        Effect.suspend(() => {
          const snapshot = stored
          return ++reads === 1 ? Effect.as(Deferred.await(gate), snapshot) : Effect.succeed(snapshot)
        })
      const check = Effect.gen(function*() {
        const cache = yield* TagPolicyCache
        const notifications = yield* Notifications
        const first = yield* Effect.forkChild(cache.policiesFor(project, ["billing"]))
        yield* Effect.sleep("50 millis")
        stored = [{ tag: "billing", maxConcurrent: 5 } as unknown as StoredTagPolicy]
        yield* notifications.send(TAG_POLICIES_CHANGED_CHANNEL, project)
        yield* Effect.sleep("50 millis")
        yield* Deferred.succeed(gate, undefined)
        assert.strictEqual((yield* Fiber.join(first)).length, 0, "what was true when the read began")
        const now = yield* cache.policiesFor(project, ["billing"])
        assert.strictEqual(now.length, 1, "read again: the change shows")
      })
      yield* check.pipe(Effect.provide(Layer.provideMerge(TagPolicyCache.layerWith(read), Layer.merge(TestDatabase, Notifications.memory))))
    }), { timeout: 60_000 })
})
