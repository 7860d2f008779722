// A PostgreSQL server of a test's own, for faults the machine's shared server must never see: the
// chaos harness's private cluster (scripts/chaos/postgres.ts: initdb in a temporary directory, its
// own port, `pg_ctl stop -m fast|immediate` and a start on the same port), stopped and removed with
// the scope. Also the service on a fresh database of it (test/support/outage.ts).
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type PrivateCluster, startPrivateCluster } from "../../scripts/chaos/postgres.ts"
import { makeTempDir } from "./database.ts"
import { serviceOnDatabase } from "./outage.ts"

/** The test's own cluster, and the database the service runs on. */
export class CrashableDatabase extends Context.Service<CrashableDatabase, {
  readonly cluster: PrivateCluster
  readonly database: string
}>()("test/CrashableDatabase") {}

const cluster = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = makeTempDir("cluster")
    return { dir, cluster: await startPrivateCluster(dir, path.join(dir, "postgres.log")) }
  }),
  ({ cluster, dir }) => Effect.promise(() => cluster.destroy().catch(() => {}).then(() => fs.rmSync(dir, { recursive: true, force: true })))
).pipe(Effect.map(({ cluster }) => cluster))

/**
 * A private cluster with `settings` (ALTER SYSTEM, applied before the service starts), and the
 * whole service (TestServer) on a fresh database of it.
 */
export const serviceOnPrivateCluster = (settings: Readonly<Record<string, string>> = {}, env: Record<string, string> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const server = yield* cluster
    for (const [name, value] of Object.entries(settings)) {
      yield* Effect.promise(() => server.query("postgres", `ALTER SYSTEM SET ${name} = '${value}'`))
    }
    yield* Effect.promise(() => server.query("postgres", "SELECT pg_reload_conf()"))
    const database = yield* Effect.promise(() => server.freshDatabase("test"))
    return Layer.merge(
      serviceOnDatabase(database.url, env),
      Layer.succeed(CrashableDatabase)({ cluster: server, database: database.name })
    )
  }))
