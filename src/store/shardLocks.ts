// Shard ownership: session-level PostgreSQL advisory locks, one per shard, held on one reserved
// session per node. That session also announces the node (nodePresence.ts): by its name, and by
// the node's presence lock, which it holds from its start to its end (a stopping node gives up its
// shards, not its presence). When it is lost (the node dies, or PostgreSQL restarts) every lock and
// the presence go with it, at the same moment.
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { SqlClient } from "effect/sql"
import { drainingApplicationName, nodeApplicationName, PRESENCE_LOCK_NAMESPACE, presenceLockKey } from "./nodePresence.ts"

/** First key of the two-int advisory locks ("tw"). */
const LOCK_NAMESPACE = 0x7477

export interface ShardLockSession {
  /** Takes the shard's lock if no other session holds it; whether this session holds it now. */
  readonly tryLock: (shard: number) => Effect.Effect<boolean, unknown>
  readonly unlock: (shard: number) => Effect.Effect<void, unknown>
  /** Gives up every shard at once, and says the node is stopping; the session (and the node's presence) stays. */
  readonly releaseAllAndDrain: Effect.Effect<void, unknown>
  /** Fails when the session is gone (its locks with it). */
  readonly check: Effect.Effect<void, unknown>
}

/** Opens this node's lock session for the scope's lifetime (closing the scope releases every lock). */
export const shardLocksOpen = (node: string): Effect.Effect<ShardLockSession, unknown, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const session = yield* sql.reserve
    // a node id is a UUID (no quotes to escape); SET takes no parameters
    yield* session.execute(`SET application_name = '${nodeApplicationName(node).replace(/'/g, "")}'`, [], undefined)
    const tryPresence = Effect.map(
      session.execute("SELECT pg_try_advisory_lock($1, $2) AS ok", [PRESENCE_LOCK_NAMESPACE, presenceLockKey(node)], undefined),
      (rows) => (rows as ReadonlyArray<{ ok: boolean }>)[0]?.ok === true
    )
    // held once taken (until the session ends); not taken while another session still holds it (this
    // node's previous session, not yet gone): tried again with every check
    let present = yield* tryPresence
    return {
      tryLock: (shard) =>
        Effect.map(
          session.execute("SELECT pg_try_advisory_lock($1, $2) AS ok", [LOCK_NAMESPACE, shard], undefined),
          (rows) => (rows as ReadonlyArray<{ ok: boolean }>)[0]?.ok === true
        ),
      unlock: (shard) => Effect.asVoid(session.execute("SELECT pg_advisory_unlock($1, $2)", [LOCK_NAMESPACE, shard], undefined)),
      releaseAllAndDrain: Effect.andThen(
        // the shard locks only: the presence lock stays until the node leaves
        session.execute(
          `SELECT count(pg_advisory_unlock($1, l.objid::bigint::int)) FROM pg_locks l
           WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.objsubid = 2 AND l.classid::bigint = $1`,
          [LOCK_NAMESPACE],
          undefined
        ),
        session.execute(`SET application_name = '${drainingApplicationName(node).replace(/'/g, "")}'`, [], undefined)
      ),
      check: Effect.suspend(() =>
        present
          ? Effect.asVoid(session.execute("SELECT 1", [], undefined))
          : Effect.map(tryPresence, (ok) => void (present = ok)))
    } satisfies ShardLockSession
  })
