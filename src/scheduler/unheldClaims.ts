// A node's own claims that nothing in its memory will send or record, sent again by the node itself.
// Other nodes recover only the claims of a node that is gone (store/schedulerQueries.ts
// triggersRecover), so a claim a live node has lost track of would wait until that node stops. It
// happens when the database crashes or a connection drops at the wrong moment:
// - a claim (or a start, or a recovery) committed but its answer was lost;
// - right after PostgreSQL restarted, another node took over a shard of this one and, counting it
//   alive, made the shard's fired triggers its claims, while its fetch of them had failed;
// - an outcome's commit was lost with PostgreSQL's crash after the node had let go of the trigger.
// Every few seconds the node lists its claims (running, or queued to start and not at its gates) and
// asks its dispatcher which it carries; one it has not carried at two passes in a row is sent again,
// its started attempt recorded as interrupted (docs/internals.md "The delivery engine").
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { NodeIdentity } from "../cluster/node.ts"
import type { GateRef } from "../cluster/wakeups.ts"
import { SchedulerTiming } from "../config.ts"
import { Dispatcher } from "../delivery/dispatcher.ts"
import { Gatekeeper } from "../gates/gatekeeper.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import { triggersClaimedBy, triggersRecoverUnheld } from "../store/schedulerQueries.ts"

/**
 * The two-pass rule: given this node's claims it does not carry now, returns those it did not carry
 * at the previous pass either (a claim whose answer is on its way is carried by the next pass).
 */
export const makeUnheldWatch = () => {
  let suspects = new Set<string>()
  return (unheld: ReadonlyArray<string>): Array<string> => {
    const lost = unheld.filter((id) => suspects.has(id))
    suspects = new Set(unheld.filter((id) => !suspects.has(id)))
    return lost
  }
}

/** One pass: this node's claims, those lost to it for two passes sent again. Returns how many. */
export const recoverUnheldClaims = (watch: (unheld: ReadonlyArray<string>) => Array<string>) =>
  Effect.gen(function*() {
    const node = (yield* NodeIdentity).id
    const dispatcher = yield* Dispatcher
    const gatekeeper = yield* Gatekeeper
    const claimed = yield* triggersClaimedBy(node)
    const lost = watch(claimed.filter((id) => !dispatcher.carries(id)))
    if (lost.length === 0) return 0
    const nowMs = yield* Clock.currentTimeMillis
    const { ids, gated } = yield* triggersRecoverUnheld({ ids: lost, node, nowMs })
    if (ids.length + gated.length === 0) return 0
    yield* Effect.logWarning(`recovered ${ids.length + gated.length} claims of this node it no longer held`).pipe(
      Effect.annotateLogs({ event: "recovered_unheld", triggers: ids.length + gated.length })
    )
    yield* dispatcher.submit(ids)
    gatekeeper.kick(gated.flatMap((row): Array<GateRef> => row.gateTags.map((tag) => ({ projectId: row.projectId, tag }))))
    return ids.length + gated.length
  })

/** Runs the passes every recoverEveryMs while the node runs (forked in its scope). */
export const forkUnheldClaimsLoop = (running: () => boolean) =>
  Effect.gen(function*() {
    const timing = yield* SchedulerTiming
    const watch = makeUnheldWatch()
    yield* forkLoop(
      "unheld claims",
      Effect.suspend(() => (running() ? recoverUnheldClaims(watch) : Effect.void)),
      { every: timing.recoverEveryMs }
    )
  })
