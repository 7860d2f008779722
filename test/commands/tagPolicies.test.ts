// The tag policy commands below the API, on a real database with a recording wake-up port: each
// committed create, update and delete kicks the gate of its tag (and of the old tag on a rename) on
// the gate's shard, a refused one kicks nothing; and two concurrent PUTs of different fields both
// survive (the row is locked from read to write).
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type ShardMessage, Wakeups } from "../../src/cluster/wakeups.ts"
import { createTagPolicy, deleteTagPolicy, listTagPolicies, updateTagPolicy } from "../../src/commands/tagPolicies.ts"
import { gateShardOf } from "../../src/domain/gates/gate.ts"
import { ShardCount } from "../../src/store/db.ts"
import { SHARDS_IN_TESTS, TestDatabase } from "../support/database.ts"
import { nextId } from "../support/fixtures.ts"

const kicked: Array<ShardMessage> = []

const RecordingWakeups = Layer.succeed(Wakeups)({
  wake: (items) => Effect.sync(() => void kicked.push(...items)),
  attach: () => Effect.void,
  detach: () => Effect.void
})

const TestLayer = Layer.mergeAll(RecordingWakeups, ShardCount.layer).pipe(Layer.provideMerge(TestDatabase))

/** A new project row; its id. */
const newProject = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = nextId()
  yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
    VALUES (${id}, ${`project-${id}`}, 10, '{}'::jsonb, now(), now())`
  return id
})

/** The kicks raised by `effect` (whether it succeeds or fails). */
const kicksOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    kicked.length = 0
    const exit = yield* Effect.exit(effect)
    return { exit, kicks: [...kicked] }
  })

const kick = (projectId: string, tag: string): ShardMessage => ({
  shard: gateShardOf(projectId, tag, SHARDS_IN_TESTS),
  gate: { projectId, tag }
})

layer(TestLayer, { timeout: "60 seconds" })("tag policy commands", (it) => {
  it.effect("create, update, rename and delete kick their tags' gates after the commit; refusals kick nothing", () =>
    Effect.gen(function*() {
      const projectId = yield* newProject
      const create = yield* kicksOf(createTagPolicy(projectId, { tag: "alpha", maxConcurrent: 1 }))
      assert.strictEqual(create.exit._tag, "Success")
      assert.deepStrictEqual(create.kicks, [kick(projectId, "alpha")])
      const id = create.exit._tag === "Success" ? create.exit.value.id : ""

      assert.deepStrictEqual((yield* kicksOf(updateTagPolicy(projectId, id, { maxConcurrent: 2 }))).kicks, [kick(projectId, "alpha")])
      assert.deepStrictEqual(
        (yield* kicksOf(updateTagPolicy(projectId, id, { tag: "beta" }))).kicks,
        [kick(projectId, "beta"), kick(projectId, "alpha")]
      )
      yield* createTagPolicy(projectId, { tag: "gamma", maxConcurrent: 1 })

      const refusals = [
        createTagPolicy(projectId, { tag: "gamma", maxConcurrent: 1 }), // 409
        createTagPolicy(projectId, { tag: "delta", maxConcurrent: 0 }), // 400
        updateTagPolicy(projectId, id, { tag: "gamma" }), // 409
        updateTagPolicy(projectId, id, { maxConcurrent: 0 }), // 400
        updateTagPolicy(projectId, nextId(), { maxConcurrent: 1 }), // 404
        deleteTagPolicy(projectId, nextId()), // 404
        deleteTagPolicy(projectId, "not-a-uuid") // 404
      ]
      for (const refusal of refusals) {
        const { exit, kicks } = yield* kicksOf(refusal)
        assert.strictEqual(exit._tag, "Failure")
        assert.deepStrictEqual(kicks, [])
      }

      assert.deepStrictEqual((yield* kicksOf(deleteTagPolicy(projectId, id))).kicks, [kick(projectId, "beta")])
      assert.deepStrictEqual((yield* listTagPolicies(projectId)).map((view) => view.tag), ["gamma"])
    }))

  it.effect("concurrent PUTs of different fields both survive", () =>
    Effect.gen(function*() {
      const projectId = yield* newProject
      for (let round = 0; round < 20; round++) {
        const policy = yield* createTagPolicy(projectId, { tag: `race-${round}`, maxConcurrent: 1 })
        yield* Effect.all([
          updateTagPolicy(projectId, policy.id, { maxConcurrent: 7 }),
          updateTagPolicy(projectId, policy.id, { requestTimeoutSeconds: 9 }),
          updateTagPolicy(projectId, policy.id, { throughput: { "1s": 3 } })
        ], { concurrency: "unbounded" })
      }
      for (const view of yield* listTagPolicies(projectId)) {
        assert.deepStrictEqual([view.maxConcurrent, view.requestTimeoutSeconds, view.throughput], [7, 9, { "1s": 3 }], view.tag)
      }
    }))
})
