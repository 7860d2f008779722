// Shard ownership: session-level PostgreSQL advisory locks, one per shard, held on one reserved
// session per node. That session also announces the node (nodePresence.ts): when it is lost (the
// node dies, or PostgreSQL restarts) every lock and the presence go with it, at the same moment.
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { SqlClient } from "effect/sql"
import { drainingApplicationName, nodeApplicationName } from "./nodePresence.ts"

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
    return {
      tryLock: (shard) =>
        Effect.map(
          session.execute("SELECT pg_try_advisory_lock($1, $2) AS ok", [LOCK_NAMESPACE, shard], undefined),
          (rows) => (rows as ReadonlyArray<{ ok: boolean }>)[0]?.ok === true
        ),
      unlock: (shard) => Effect.asVoid(session.execute("SELECT pg_advisory_unlock($1, $2)", [LOCK_NAMESPACE, shard], undefined)),
      releaseAllAndDrain: Effect.andThen(
        session.execute("SELECT pg_advisory_unlock_all()", [], undefined),
        session.execute(`SET application_name = '${drainingApplicationName(node).replace(/'/g, "")}'`, [], undefined)
      ),
      check: Effect.asVoid(session.execute("SELECT 1", [], undefined))
    } satisfies ShardLockSession
  })
