// The live Dispatcher: claimed rows (already running) go straight to the sender pool (at most
// MAX_IN_FLIGHT requests at once), and rows with gated tags or a gated origin through this node's gates first
// (gates/gatekeeper.ts: admitted in memory, told when each request leaves and ends);
// triggers submitted by id (replayed or recovered) are first started in batches (queued → running,
// one statement returning what to send). The Executor sends them, and the completer (completer.ts)
// records the outcomes in batches.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import { NodeIdentity } from "../cluster/node.ts"
import { Wakeups } from "../cluster/wakeups.ts"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import type { RetryPolicy } from "../domain/retry.ts"
import { requestTimeoutFor, type StoredTagPolicy, tagRetryPolicies } from "../domain/tagPolicy.ts"
import { Gatekeeper } from "../gates/gatekeeper.ts"
import { Metrics } from "../metrics/metrics.ts"
import { TagPolicyCache } from "../gates/tagPolicyCache.ts"
import { TargetPolicyCache } from "../gates/targetPolicyCache.ts"
import type { ClaimedRow, DeliveryRow } from "../domain/trigger.ts"
import { forkLoop, retryUntilDone } from "../lib/backgroundLoop.ts"
import { stageTrace } from "../lib/stageTrace.ts"
import type { Database } from "../store/db.ts"
import { executionsRecord } from "../store/executions.ts"
import { triggersRelease, triggersStartDelivery } from "../store/schedulerQueries.ts"
import { type AttemptSpan, DeliveryTracing } from "./attemptTracing.ts"
import { type BehindEvent, makeBehindTracker } from "./behind.ts"
import { completionOf, makeCompleter } from "./completer.ts"
import { Dispatcher, makeFiredHolds } from "./dispatcher.ts"
import { makeEarlyRelease } from "./earlyRelease.ts"
import { type DeliveryOutcome, Executor } from "./executor.ts"
import { mayHaveReplayOverride, withReplayOverrides } from "./replayOverrides.ts"
import { makeSenderPool } from "./senderPool.ts"

export const DEFAULT_TIMEOUT_SECONDS = 300
const START_BATCH = 512

/** A trigger on its way out, with what its tag policies say about it (read once, from the cache). */
interface Outgoing {
  readonly row: DeliveryRow
  /** The shortest requestTimeoutSeconds of its tags' policies, else the default. */
  readonly timeoutSeconds: number
  /** The retry rules of its tags' policies (docs/retries.md "Which policy applies", 2). */
  readonly tagRetry: ReadonlyArray<RetryPolicy>
  /** Its attempt's span, from when it leaves (tracing on; attemptTracing.ts). */
  span: AttemptSpan | undefined
}

/** What the trigger's tag policies say about its delivery; nothing to look up for a trigger without tags. */
const outgoing = (row: DeliveryRow, policies: ReadonlyArray<StoredTagPolicy>): Outgoing => ({
  row,
  timeoutSeconds: requestTimeoutFor(policies) ?? DEFAULT_TIMEOUT_SECONDS,
  tagRetry: tagRetryPolicies(policies),
  span: undefined
})

/** The lines saying this node sends behind its due times, and that it has caught up (behind.ts). */
const logBehind = (event: BehindEvent) =>
  event._tag === "Behind"
    ? Effect.logWarning(
      `delivery is behind: for ${(event.forMs / 1000).toFixed(1)} s every trigger left a second or more after its due time ` +
        `(the latest ${(event.latenessMs / 1000).toFixed(1)} s): this node does not keep up with what comes due`
    ).pipe(Effect.annotateLogs({ event: "delivery_behind", latenessMs: Math.round(event.latenessMs), forMs: Math.round(event.forMs) }))
    : Effect.logInfo(`delivery caught up: triggers leave at their time again, after ${(event.behindForMs / 1000).toFixed(1)} s behind`)
      .pipe(Effect.annotateLogs({ event: "delivery_caught_up", behindForMs: Math.round(event.behindForMs) }))

/** How often a draining dispatcher looks whether it is done. */
const DRAIN_POLL_MS = 20
/** How long a drain waits past its deadline for the interrupted attempts to be recorded. */
const AFTER_DEADLINE_MS = 5_000

export const DispatcherLive = Layer.effect(Dispatcher, Effect.gen(function*() {
  const executor = yield* Executor
  const config = yield* AppConfig
  const wakeups = yield* Wakeups
  const policyCache = yield* TagPolicyCache
  const targetPolicies = yield* TargetPolicyCache
  const gatekeeper = yield* Gatekeeper
  const node = (yield* NodeIdentity).id
  const random = yield* Random.Random
  const services = yield* Effect.context<Database>()
  const submitted = yield* Queue.unbounded<string>()
  const clock = yield* Clock.Clock
  const metrics = yield* Metrics
  const tracing = yield* DeliveryTracing
  /** Submitted ids not yet started: what a drain waits for (with the outcomes not yet recorded). */
  let unstarted = 0
  /** Fired triggers held from their hand-over until their outcome is recorded (dispatcher.ts). */
  const fired = makeFiredHolds()
  /** Every trigger in hand, from its submission or hand-over until its outcome is recorded or it is given back. */
  const inHand = new Set<string>()
  const completer = yield* makeCompleter({
    node,
    record: (input) => Effect.provideContext(executionsRecord(input), services),
    recorded: (batch) => {
      for (const { row } of batch) {
        if (row.fired !== null) fired.release(row.id)
        inHand.delete(row.id)
      }
    }
  })
  const behind = makeBehindTracker((event) => void Effect.runForkWith(services)(logBehind(event)))

  const senders = makeSenderPool<Outgoing, DeliveryOutcome>({
    maxInFlight: config.maxInFlight,
    send: (sent, done) => {
      const { row, timeoutSeconds } = sent
      const gated = row.gateTags.length > 0
      const nowMs = clock.currentTimeMillisUnsafe()
      // lateness of a trigger handed over at its due time by its shard (not gated, replayed or recovered)
      const dueAtMs = (row as Partial<ClaimedRow>).dueAtMs
      if (dueAtMs !== undefined && !gated) {
        metrics.observeLateness((nowMs - dueAtMs) / 1000)
        behind.sent(nowMs, dueAtMs)
      }
      if (tracing !== null) sent.span = tracing.start(row, dueAtMs)
      if (stageTrace !== null) stageTrace.markOne(row.id, "sent", nowMs, dueAtMs, row.url)
      executor.start({
        url: row.url, method: row.method, headers: row.headers, body: row.body, contentType: row.contentType, timeoutSeconds,
        // signed as it leaves (docs/signatures.md: the headers every delivery carries)
        identity: {
          triggerId: row.id, attempt: row.attempt, signingSecrets: row.signingSecrets, timestampSeconds: Math.floor(nowMs / 1000),
          trace: sent.span?.outgoing
        }
      }, done, gated
        // when it is written to a connection (a connect or a busy event loop can hold it well past
        // this instant): its throughput windows count it from then
        ? () => gatekeeper.written(row.id)
        : undefined)
    },
    onOutcome: (sent, outcome) => {
      if (stageTrace !== null) stageTrace.markOne(sent.row.id, "done", clock.currentTimeMillisUnsafe())
      if (sent.row.gateTags.length > 0) gatekeeper.finished(sent.row.id, outcome)
      const completion = completionOf(sent.row, sent.tagRetry, outcome, random.nextDoubleUnsafe(), uuidv7(outcome.finishedAtMs))
      const execution = completion.execution
      const next = execution.succeeded ? "succeeded" : execution.isDeadLetter ? "dead_letter" : "retrying"
      metrics.delivered(next, outcome.errorKind, outcome.httpStatus)
      metrics.observeDuration(outcome.durationMs / 1000)
      const span = sent.span
      if (span === undefined) return completer.offer(completion)
      span.ended(outcome)
      completer.offer({ ...completion, recording: span.recording(next) })
    },
    onCrash: (error) => Effect.runForkWith(services)(Effect.logError("delivery failed unexpectedly", error)),
    besides: gatekeeper.waiting
  })
  yield* Effect.addFinalizer(() => Effect.sync(senders.close))
  metrics.watch("inFlight", senders.inFlight)
  metrics.watch("behind", () => behind.behindSeconds(clock.currentTimeMillisUnsafe()))
  metrics.watch("waiting", () => senders.size() + unstarted + early.size() + gatekeeper.waiting())

  /** The rows with what their tags' policies say (a cache read per project, none untagged). */
  const prepare = (claimed: ReadonlyArray<DeliveryRow>): Effect.Effect<Array<Outgoing>> =>
    Effect.gen(function*() {
      // a bulk replay's attempts go where its `replay` says (a read only when replays are among them),
      // and an origin under a target policy is one more gate (no lookup for a project without one)
      const rows = yield* targetPolicies.withOriginGates(yield* Effect.provideContext(withReplayOverrides(claimed), services))
      if (rows.every((row) => row.tags.length === 0)) return rows.map((row) => outgoing(row, []))
      const ready: Array<Outgoing> = []
      for (const row of rows) {
        const policies = yield* policyCache.policiesFor(row.projectId, row.tags).pipe(
          // the policies cannot be read now (database away): send with the defaults rather than not at all
          Effect.catchCause((cause) => Effect.as(Effect.logWarning("reading tag policies failed; delivering with defaults", cause), []))
        )
        ready.push(outgoing(row, policies))
      }
      return ready
    })

  gatekeeper.attach({
    send: (items) => {
      // those a gate took from its backlog in PostgreSQL come in here
      for (const item of items) inHand.add(item.row.id)
      senders.push(items as ReadonlyArray<Outgoing>)
    },
    released: (ids) => {
      for (const id of ids) {
        fired.release(id)
        inHand.delete(id)
      }
    },
    prepare,
    roomChanged: senders.recheck,
    maxInFlight: config.maxInFlight
  })

  /** Stamps a stage of the rows when lateness is traced (lib/stageTrace.ts); returns them. */
  const traceStage = <T extends DeliveryRow | Outgoing>(rows: ReadonlyArray<T>, stage: "released" | "pushed") => {
    if (stageTrace !== null) {
      stageTrace.mark(rows.map((r) => "row" in r ? r.row.id : r.id), stage, clock.currentTimeMillisUnsafe())
    }
    return rows
  }

  /** Hands rows to the senders, those with gated tags through the gates. */
  const deliver = (rows: ReadonlyArray<DeliveryRow>): Effect.Effect<void> =>
    Effect.map(Effect.andThen(Effect.sync(() => carry(rows)), prepare(traceStage(rows, "released"))), (ready) => {
      traceStage(ready, "pushed")
      const gated = ready.filter((sent) => sent.row.gateTags.length > 0)
      if (gated.length === 0) return senders.push(ready)
      gatekeeper.offer(gated)
      if (gated.length < ready.length) senders.push(ready.filter((sent) => sent.row.gateTags.length === 0))
    })

  /** Takes the rows in hand (deliver, deliverAt). */
  function carry(rows: ReadonlyArray<DeliveryRow>) {
    for (const row of rows) inHand.add(row.id)
  }

  /** What `prepare` would look up for the row itself: a replay's override, its tags' policies; or it waits for a gate. */
  const needsLookup = (row: DeliveryRow) => mayHaveReplayOverride(row) || row.tags.length > 0 || row.gateTags.length > 0

  /**
   * `deliver` as a plain call, for the rows that need nothing looked up (most fired rows): no
   * replay's override, no tag's policies, no gate, no project with a target policy. The release
   * loop's timer sends them without a fiber (earlyRelease.ts); false leaves the rows to `deliver`.
   */
  const deliverNow = (rows: ReadonlyArray<DeliveryRow>): boolean => {
    if (rows.some(needsLookup) || targetPolicies.mayGate(rows)) return false
    carry(rows)
    const ready = traceStage(traceStage(rows, "released").map((row) => outgoing(row, [])), "pushed")
    senders.push(ready)
    return true
  }

  /** Rows handed over ahead of their time wait for it here (`deliverAt`). */
  const early = yield* makeEarlyRelease<ClaimedRow>(deliver, deliverNow)

  /** Replayed and recovered triggers: queued → running (retried until the database takes it), then sent. */
  const starter = Effect.gen(function*() {
    const ids = yield* Queue.takeBetween(submitted, 1, START_BATCH)
    const nowMs = yield* Clock.currentTimeMillis
    const rows = yield* retryUntilDone("starting deliveries", triggersStartDelivery({ ids, node, nowMs }))
    unstarted -= ids.length
    // those not started are no longer queued under this node (cancelled, or started already)
    if (rows.length < ids.length) {
      const started = new Set(rows.map((row) => row.id))
      for (const id of ids) if (!started.has(id)) inHand.delete(id)
    }
    yield* deliver(rows)
  })

  yield* forkLoop("delivery starter", starter, { afterFailure: 0 })
  yield* forkLoop("early release", early.releaseTurn, { afterFailure: 0 })

  /** Nothing left to send or record (a drain released the gates' waiters, and those handed over since). */
  const settled = () =>
    unstarted === 0 && completer.unrecorded() === 0 && senders.inFlight() === 0 && senders.size() === 0 && early.size() === 0 &&
    gatekeeper.waiting() === 0

  /** Waits until everything is sent and recorded, or until `untilMs`; whether it all settled. */
  const settle = (untilMs: number): Effect.Effect<boolean> =>
    Effect.gen(function*() {
      for (;;) {
        if (settled()) return true
        const nowMs = yield* Clock.currentTimeMillis
        if (nowMs >= untilMs) return false
        yield* Effect.sleep(Math.min(DRAIN_POLL_MS, untilMs - nowMs))
      }
    })

  const drain = (timeoutMs: number) =>
    Effect.gen(function*() {
      const startMs = yield* Clock.currentTimeMillis
      yield* Effect.logInfo(`draining: ${senders.inFlight()} deliveries in flight, ${senders.size() + unstarted + early.size() + gatekeeper.waiting()} waiting`)
      // triggers still waiting at their gates go back to wait in PostgreSQL, for the other nodes
      yield* gatekeeper.releaseAll
      if (yield* settle(startMs + timeoutMs)) return yield* gatekeeper.leave
      // past the deadline: give back what has not started, interrupt what is in flight
      // replays and recoveries not started yet stay queued under this node: crash recovery sends them
      const waiting = [...early.takeAll(), ...senders.takeWaiting().map((sent) => sent.row)].map((row) => row.id)
      unstarted = 0
      for (const id of waiting) {
        fired.release(id)
        inHand.delete(id)
      }
      const nowMs = yield* Clock.currentTimeMillis
      const released = yield* triggersRelease({ ids: waiting, node, nowMs }).pipe(
        Effect.provideContext(services),
        Effect.catchCause((cause) => Effect.as(Effect.logWarning("giving back unsent triggers failed; crash recovery will send them", cause), []))
      )
      yield* wakeups.wake(released)
      yield* Effect.logWarning(
        `drain timeout reached: ${senders.inFlight()} attempts interrupted, ${waiting.length} unsent triggers given back`
      )
      executor.abortAll()
      if (!(yield* settle(nowMs + AFTER_DEADLINE_MS))) {
        yield* Effect.logError(`${completer.unrecorded()} outcomes could not be recorded before stopping; crash recovery will resend them`)
      }
      yield* gatekeeper.leave
    })

  return Dispatcher.of({
    submit: (ids) =>
      Effect.suspend(() => {
        unstarted += ids.length
        for (const id of ids) inHand.add(id)
        return Queue.offerAll(submitted, ids)
      }).pipe(Effect.asVoid),
    deliver,
    deliverAt: (rows) => Effect.andThen(Effect.sync(() => carry(rows)), early.deliverAt(rows)),
    quietFrom: early.quietFrom,
    hold: fired.hold,
    holds: fired.holds,
    held: fired.held,
    carries: (id) => inHand.has(id),
    awaitRoom: (limit) => Effect.promise(() => senders.whenBelow(limit)),
    drain
  })
}))
