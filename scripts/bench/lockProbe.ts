// How long a scheduler claim would wait behind a /declare or /bulk call: while the call runs, a
// probe on its own connection locks one of the rows the call changes (`SELECT … FOR UPDATE`, as a
// claim's UPDATE would, in its own short transaction), over and over, a random row each time, and
// keeps the longest wait. A row the call holds makes the probe wait until the call's transaction
// commits, so the longest wait is about the longest time the call holds rows.
import { PgClient } from "@effect/sql-pg"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"

export const withLockProbe = async <A>(
  databaseUrl: string,
  ids: ReadonlyArray<string>,
  call: () => Promise<A>
): Promise<{ readonly result: A; readonly maxWaitMs: number; readonly probes: number }> => {
  const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))
  const lockOne = (id: string) =>
    runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1 FROM triggers WHERE id = ${id} FOR UPDATE`))
  try {
    await lockOne(ids[0]!) // connected before the call starts
    let done = false
    let maxWaitMs = 0
    let probes = 0
    const probe = (async () => {
      while (!done) {
        const start = performance.now()
        await lockOne(ids[Math.floor(Math.random() * ids.length)]!)
        maxWaitMs = Math.max(maxWaitMs, performance.now() - start)
        probes++
      }
    })()
    let result: A
    try {
      result = await call()
    } finally {
      done = true
      await probe
    }
    return { result, maxWaitMs, probes }
  } finally {
    await runtime.dispose()
  }
}
