// The dashboard's background work on every node (docs/dashboard.md), off the delivery path:
// - alerts: every ALERT_TICK_MS, the projects whose dead letters (or circuit openings) wait and whose alert may send now
//   (at most one message a minute each, store/alerts.ts) get one message per target; a failing
//   target is recorded (alert_sends), never retried;
// - the rollup: pending rows folded and tag policies sampled every 5 s (each minute's row keeps its
//   peak, so a hold of a few seconds shows: docs/dashboard.md), rows past
//   ROLLUP_KEEP_MS deleted;
// - ended sessions, old failed sign-ins, orphaned outbox rows and old alert records deleted.
// Each runs in its own loop (lib/backgroundLoop.ts: a failure is logged and the loop goes on).
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { sendToTargets } from "../commands/alerts.ts"
import { purgeSessions } from "../commands/sessions.ts"
import { ALERT_GROUP_MS, alertMessage, LISTED_DEAD_LETTERS } from "../domain/alerts.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import { alertsPurge, alertsTakeDue } from "../store/alerts.ts"
import { statsFold, statsPurge, statsSampleTagPolicies } from "../store/deliveryStats.ts"
import { AlertSenders } from "../delivery/alertSenders.ts"

export const ALERT_TICK_MS = 2_000
/** How often the rollup is folded and the tag policies sampled. */
export const SAMPLE_EVERY_MS = 5_000
const PURGE_EVERY_MS = 10 * 60_000
/** What the overview can show (24 h) with room to spare. */
export const ROLLUP_KEEP_MS = 8 * 86_400_000
const ALERT_SENDS_KEEP_MS = 30 * 86_400_000
/** Projects whose alerts one node takes per tick. */
const ALERTS_PER_TICK = 20

/** Sends the messages of every project whose alert is due now (each project's targets at once). */
export const sendDueAlerts = Effect.gen(function*() {
  const nowMs = yield* Clock.currentTimeMillis
  const due = yield* alertsTakeDue({ nowMs, groupMs: ALERT_GROUP_MS, listed: LISTED_DEAD_LETTERS, limit: ALERTS_PER_TICK })
  yield* Effect.forEach(due, (alert) =>
    sendToTargets({
      projectId: alert.projectId,
      alert,
      message: alertMessage(alert.projectName, { total: alert.total, listed: alert.listed }, { total: alert.circuitOpenings, listed: alert.openings }),
      deadLetters: alert.total,
      circuitOpenings: alert.circuitOpenings
    }), { concurrency: "unbounded", discard: true })
})

/** Folds the rollup and, on the node that folded (one at a time), samples the tag policies into the current minute's peak. */
const rollupTurn = Effect.gen(function*() {
  if (!(yield* statsFold())) return
  yield* statsSampleTagPolicies(Math.floor((yield* Clock.currentTimeMillis) / 60_000) * 60_000)
})

const purge = Effect.gen(function*() {
  const nowMs = yield* Clock.currentTimeMillis
  yield* purgeSessions
  yield* alertsPurge({ sendsBeforeMs: nowMs - ALERT_SENDS_KEEP_MS })
  yield* statsPurge(nowMs - ROLLUP_KEEP_MS)
})

/** The loops, for the scope of the service. */
export class DashboardJobs extends Context.Service<DashboardJobs, {}>()("timewheel/DashboardJobs") {
  static readonly layer = Layer.effect(DashboardJobs, Effect.gen(function*() {
    yield* forkLoop("alert sender", sendDueAlerts, { every: ALERT_TICK_MS })
    yield* forkLoop("overview rollup", rollupTurn, { every: SAMPLE_EVERY_MS })
    yield* forkLoop("dashboard purge", purge, { every: PURGE_EVERY_MS })
    return DashboardJobs.of({})
  })).pipe(Layer.provideMerge(AlertSenders.layer))
}
