// A bulk action survives the node running it (docs/bulk-actions.md "Large sets, crashes and calling
// again": a crash of the node mid-action, the action completed by calling again): a real `npm start`
// child redrives 2,000 dead letters in chunks of 500; a claim-like row lock held by the test stops the
// last chunk half-way, so the node is killed with SIGKILL in the middle of the action (1,500 of 2,000
// done, a chunk's transaction open). A second start on the same database, called again with the same
// body, answers the same action (or, if its worker was quicker, a new one that finds nothing left to
// redrive) and completes it: every dead letter is replayed exactly once by the action (one succeeded
// `retry` execution each), whichever node queued it, and the replays queued by the dead node are sent
// by crash recovery.
import { PgClient } from "@effect/sql-pg"
import { Deferred, Effect, Exit, ManagedRuntime, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { request } from "undici"
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insertDeadLetters } from "../support/fixtures.ts"
import { runCli, startService } from "../support/cli.ts"
import { insecureAgent } from "../support/server.ts"
import { target } from "../support/target.ts"
import { waitUntilAsync } from "../support/wait.ts"

const DEAD_LETTERS = 2_000
const CHUNK = 500 // the default chunk size (commands/bulkActionChunk.ts)

const call = async (baseUrl: string, key: string, method: string, path: string, body?: unknown) => {
  const response = await request(`${baseUrl}${path}`, {
    method,
    dispatcher: insecureAgent,
    headers: { "ttr-api-key": key, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.statusCode, json: (await response.body.json()) as any }
}

describe("a bulk action when its node is killed", () => {
  const scope = Effect.runSync(Scope.make())
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  it("is completed after a restart and a call again, each dead letter replayed once", async () => {
    const databaseUrl = await Effect.runPromise(Scope.provide(freshDatabaseUrl, scope))
    const env = { DATABASE_URL: databaseUrl, DATA_DIR: makeTempDir("bulk-crash"), PORT: "0", HOST: "127.0.0.1", SHARDS: "4" }
    const hooks = await Effect.runPromise(Scope.provide(target, scope))
    const database = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 }))
    const db = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => database.runPromise(effect)

    const first = await startService(env)
    let key = ""
    let actionId = ""
    const body = { action: "replay", filter: { deadLetter: true } }
    const release = Deferred.makeUnsafe<void>()
    try {
      const created = await runCli(["project", "create", "redrive"], { env })
      expect(created.code).toBe(0)
      const projectId = created.stdout.trim()
      key = (await runCli(["key", "create", "redrive"], { env })).stdout.trim()
      const ids = await db(insertDeadLetters(Array.from({ length: DEAD_LETTERS }, (_, n) => ({ projectId, url: `${hooks.origin}/hit?n=${n}` }))))
      const last = [...ids].sort().at(-1)!

      // the last chunk will wait for this lock, as it would behind a long claim
      const locked = Deferred.makeUnsafe<void>()
      void db(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT 1 FROM triggers WHERE id = ${last} FOR UPDATE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      }))))
      await Effect.runPromise(Deferred.await(locked))

      const started = await call(first.baseUrl, key, "POST", "/actions", body)
      expect(started.status).toBe(202)
      expect(started.json.matched).toBe(DEAD_LETTERS)
      actionId = started.json.id
      let progress: any
      await waitUntilAsync(async () => {
        progress = (await call(first.baseUrl, key, "GET", `/actions/${actionId}`)).json
        return progress?.processed === DEAD_LETTERS - CHUNK
      }, 30_000, "every chunk but the held one processed")
      expect(progress.processed).toBe(DEAD_LETTERS - CHUNK)
      expect(progress.status).toBe("running")
      process.kill(first.servicePid, "SIGKILL")
    } finally {
      first.kill()
      // the dead node's open chunk gets the row, finds its client gone and rolls back
      await Effect.runPromise(Deferred.succeed(release, undefined))
    }

    const second = await startService(env)
    try {
      const again = await call(second.baseUrl, key, "POST", "/actions", body)
      expect(again.status).toBe(202)
      console.log(again.json.id === actionId
        ? `called again after the restart: the same action, ${again.json.status}, ${again.json.processed} of ${again.json.matched} processed`
        : "called again after the restart: the new node had completed the action already")
      if (again.json.id !== actionId) {
        // the new node's worker had already completed it: the call is a new action, with nothing left to redrive
        expect(again.json.replayed).toBe(0)
      }
      let action: any
      await waitUntilAsync(async () => {
        action = (await call(second.baseUrl, key, "GET", `/actions/${actionId}`)).json
        return action?.status === "completed"
      }, 60_000, "the action to complete after the restart")
      expect([action.status, action.matched, action.processed, action.replayed, action.untouched]).toEqual(["completed", DEAD_LETTERS, DEAD_LETTERS, DEAD_LETTERS, {}])

      const retries = () => db(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ succeeded: number; triggers: number }>`
        SELECT count(*) FILTER (WHERE n = 1)::int AS succeeded, count(*)::int AS triggers FROM (
          SELECT t.id, count(e.id) FILTER (WHERE e.status = 'succeeded' AND e.triggered_by = 'retry') AS n
          FROM triggers t LEFT JOIN executions e ON e.trigger_id = t.id GROUP BY t.id) x`))
      let counts = (await retries())[0]!
      await waitUntilAsync(async () => {
        counts = (await retries())[0]!
        return counts.succeeded >= DEAD_LETTERS
      }, 60_000, "a succeeded replay of every trigger")
      // one succeeded replay per trigger: none replayed twice by the action, none forgotten
      expect(counts).toEqual({ succeeded: DEAD_LETTERS, triggers: DEAD_LETTERS })
      const reached = new Set(hooks.at("/hit").map((arrival) => arrival.url))
      expect(reached.size).toBe(DEAD_LETTERS)
      const actions = (await call(second.baseUrl, key, "GET", "/actions")).json.actions
      expect(actions.filter((a: { replayed: number }) => a.replayed > 0).map((a: { id: string }) => a.id)).toEqual([actionId])
    } finally {
      await second.stop().catch(() => second.kill())
      await database.dispose()
    }
  }, 240_000)
})
