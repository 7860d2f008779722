// Group commit of claims: every shard actor claims what comes due in its own wheel, and at thousands
// of due triggers per second spread over 64 shards that was a one-row UPDATE per trigger. Actors queue
// their claims here instead; a few rounds take whatever has queued and claim it in one statement each,
// handing every actor back exactly its own rows. A failed statement fails each of its claims.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { NodeIdentity } from "../cluster/node.ts"
import type { ClaimedRow } from "../domain/trigger.ts"
import { makeGroupCommit } from "../lib/groupCommit.ts"
import { triggersClaim } from "../store/schedulerQueries.ts"
import { isDatabaseUnavailable } from "../store/unavailable.ts"

interface Claim {
  readonly ids: ReadonlyArray<string>
  readonly untilMs: number
}

/** Claims per statement: a burst of 64 shards × 300 rows becomes 8 statements of ~2,400 rows. */
const MAX_CLAIMS_PER_ROUND = 8
/** Statements in flight at once, so a burst uses PostgreSQL's cores. */
const ROUNDS_IN_FLIGHT = 4

/** The claimed rows, split back to the claims whose ids they are. */
const perClaim = (claims: ReadonlyArray<Claim>, rows: ReadonlyArray<ClaimedRow>): Array<Array<ClaimedRow>> => {
  const owner = new Map<string, number>()
  claims.forEach((claim, i) => claim.ids.forEach((id) => owner.set(id, i)))
  const out = claims.map((): Array<ClaimedRow> => [])
  for (const row of rows) out[owner.get(row.id)!]!.push(row)
  return out
}

export class ClaimBatcher extends Context.Service<ClaimBatcher, {
  /**
   * Claims those of `ids` still pending and due by `untilMs` (or by the latest cutoff of the claims
   * sharing the statement: at most a few milliseconds later, and the rows are still handed over at
   * their own due time).
   */
  readonly claim: (ids: ReadonlyArray<string>, untilMs: number) => Effect.Effect<ReadonlyArray<ClaimedRow>, unknown>
}>()("timewheel/ClaimBatcher") {
  static readonly layer = Layer.effect(ClaimBatcher, Effect.gen(function*() {
    const node = (yield* NodeIdentity).id
    const claim = yield* makeGroupCommit({
      maxBatch: MAX_CLAIMS_PER_ROUND,
      rounds: ROUNDS_IN_FLIGHT,
      name: "claim batcher",
      failsWholeGroup: isDatabaseUnavailable,
      run: (claims: ReadonlyArray<Claim>) =>
        Clock.currentTimeMillis.pipe(
          Effect.flatMap((nowMs) =>
            triggersClaim({ ids: claims.flatMap((c) => c.ids), untilMs: Math.max(...claims.map((c) => c.untilMs)), node, nowMs })),
          Effect.map((rows) => perClaim(claims, rows))
        )
    })
    return ClaimBatcher.of({ claim: (ids, untilMs) => claim({ ids, untilMs }) })
  }))
}
