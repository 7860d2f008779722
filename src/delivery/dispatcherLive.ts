// The live Dispatcher: claimed rows (already running) go straight to the sender pool (at most
// MAX_IN_FLIGHT requests at once), and rows with gated tags or a gated origin through this node's gates first
// (gates/gatekeeper.ts: admitted in memory, told when each request leaves and ends);
// triggers submitted by id (replayed or recovered) are first started in batches (queued → running,
// one statement returning what to send). The Executor sends them, and the completer records the
// outcomes in batches (executions + status in one transaction).
// Retries due soon are woken into their shard's wheel right after the commit.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import { NodeIdentity } from "../cluster/node.ts"
import { Wakeups } from "../cluster/wakeups.ts"
import { AppConfig } from "../config.ts"
import { uuidv7 } from "../domain/ids.ts"
import { type AttemptResult, decideOutcome, effectivePolicy, projectPolicyFromStored, type RetryPolicy } from "../domain/retry.ts"
import { refusalRetryAfterMs } from "../domain/gates/gateHold.ts"
import { requestTimeoutFor, type StoredTagPolicy, tagRetryPolicies } from "../domain/tagPolicy.ts"
import { Gatekeeper } from "../gates/gatekeeper.ts"
import { Metrics } from "../metrics/metrics.ts"
import { TagPolicyCache } from "../gates/tagPolicyCache.ts"
import { TargetPolicyCache } from "../gates/targetPolicyCache.ts"
import type { ClaimedRow, DeliveryRow } from "../domain/trigger.ts"
import { forkLoop, retryUntilDone } from "../lib/backgroundLoop.ts"
import type { Database } from "../store/db.ts"
import { type ExecutionRecord, executionsRecord, type TriggerOutcome } from "../store/executions.ts"
import { triggersRelease, triggersStartDelivery } from "../store/schedulerQueries.ts"
import { type AttemptSpan, DeliveryTracing, type RecordingSpan } from "./attemptTracing.ts"
import { type BehindEvent, makeBehindTracker } from "./behind.ts"
import { Dispatcher, makeFiredHolds } from "./dispatcher.ts"
import { makeEarlyRelease } from "./earlyRelease.ts"
import { type DeliveryOutcome, Executor } from "./executor.ts"
import { withReplayOverrides } from "./replayOverrides.ts"
import { makeSenderPool } from "./senderPool.ts"

export const DEFAULT_TIMEOUT_SECONDS = 300
const START_BATCH = 512
const COMPLETE_BATCH = 1_000

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

interface Completion {
  readonly row: DeliveryRow
  readonly execution: ExecutionRecord
  readonly outcome: TriggerOutcome
  /** The span of recording it (tracing on), ended once its batch is committed. */
  readonly recording?: RecordingSpan
}

/** What the trigger's tag policies say about its delivery; nothing to look up for a trigger without tags. */
const outgoing = (row: DeliveryRow, policies: ReadonlyArray<StoredTagPolicy>): Outgoing => ({
  row,
  timeoutSeconds: requestTimeoutFor(policies) ?? DEFAULT_TIMEOUT_SECONDS,
  tagRetry: tagRetryPolicies(policies),
  span: undefined
})

const attemptResult = (outcome: DeliveryOutcome): AttemptResult =>
  outcome.errorKind !== null
    ? { _tag: "NoResponse", errorKind: outcome.errorKind }
    : { _tag: "Response", httpStatus: outcome.httpStatus ?? 0 }

/**
 * The single place that turns one delivery outcome into an execution record and a next state, under
 * the policy that applies (per-trigger, else its tags', else the project's: docs/retries.md
 * "Which policy applies").
 */
export const completionOf = (sent: Outgoing, outcome: DeliveryOutcome, random: number, id: string): Completion => {
  const row = sent.row
  const policy = effectivePolicy({
    trigger: row.retry as RetryPolicy | null,
    tagPolicies: sent.tagRetry,
    project: projectPolicyFromStored(row.projectRetry)
  })
  const result = attemptResult(outcome)
  const decision = decideOutcome({ policy, attempt: row.attempt, result, random })
  // a refusal's retry waits at least until its Retry-After (docs/retries.md "A retry policy")
  const notBeforeMs = refusalRetryAfterMs(outcome, outcome.finishedAtMs) ?? -Infinity
  return {
    row,
    execution: {
      id,
      triggerId: row.id,
      projectId: row.projectId,
      attempt: row.attempt,
      succeeded: decision._tag === "Succeeded",
      startedAtMs: outcome.startedAtMs,
      finishedAtMs: outcome.finishedAtMs,
      durationMs: outcome.durationMs,
      httpStatus: outcome.httpStatus,
      responseHeaders: outcome.responseHeaders,
      responseBody: outcome.responseBody,
      errorKind: outcome.errorKind,
      errorCode: outcome.errorCode,
      errorMessage: outcome.errorMessage,
      isDeadLetter: decision._tag === "DeadLetter",
      connectTimeoutSeconds: outcome.connectTimeoutSeconds,
      timeoutSeconds: outcome.timeoutSeconds,
      triggeredBy: row.triggeredBy,
      url: row.url,
      scheduledAtMs: row.scheduledAtMs,
      gated: row.gateTags.length > 0
    },
    outcome: {
      id: row.id,
      attempt: row.attempt,
      firedSeenUs: row.fired?.seenUs ?? null,
      retryAtMs: decision._tag === "RetryAt" ? Math.max(outcome.finishedAtMs + decision.delayMs, notBeforeMs) : null
    }
  }
}

/** One line per dead letter, once recorded (with LOG_FORMAT=json: `event` `dead_letter` and the attempt's fields). */
const logDeadLetter = (execution: ExecutionRecord) =>
  Effect.logWarning(
    `trigger ${execution.triggerId} dead-lettered after attempt ${execution.attempt}: ` +
      (execution.errorKind === null ? `HTTP ${execution.httpStatus}` : `${execution.errorKind} (${execution.errorCode ?? "no code"})`)
  ).pipe(Effect.annotateLogs({
    event: "dead_letter",
    triggerId: execution.triggerId,
    projectId: execution.projectId,
    attempt: execution.attempt,
    httpStatus: execution.httpStatus,
    errorKind: execution.errorKind
  }))

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
  const completions = yield* Queue.unbounded<Completion>()
  const clock = yield* Clock.Clock
  const metrics = yield* Metrics
  const tracing = yield* DeliveryTracing
  /** Submitted ids not yet started, and outcomes not yet recorded: what a drain waits for. */
  let unstarted = 0
  let unrecorded = 0
  /** Fired triggers held from their hand-over until their outcome is recorded (dispatcher.ts). */
  const fired = makeFiredHolds()
  /** Every trigger in hand, from its submission or hand-over until its outcome is recorded or it is given back. */
  const inHand = new Set<string>()
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
    onOutcome: (row, outcome) => {
      unrecorded++
      if (row.row.gateTags.length > 0) gatekeeper.finished(row.row.id, outcome)
      const completion = completionOf(row, outcome, random.nextDoubleUnsafe(), uuidv7(outcome.finishedAtMs))
      const execution = completion.execution
      const next = execution.succeeded ? "succeeded" : execution.isDeadLetter ? "dead_letter" : "retrying"
      metrics.delivered(next, outcome.errorKind, outcome.httpStatus)
      metrics.observeDuration(outcome.durationMs / 1000)
      const span = row.span
      if (span === undefined) return void Queue.offerUnsafe(completions, completion)
      span.ended(outcome)
      Queue.offerUnsafe(completions, { ...completion, recording: span.recording(next) })
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
    roomChanged: senders.recheck
  })

  /** Hands rows to the senders, those with gated tags through the gates. */
  const deliver = (rows: ReadonlyArray<DeliveryRow>): Effect.Effect<void> =>
    Effect.map(Effect.andThen(Effect.sync(() => carry(rows)), prepare(rows)), (ready) => {
      const gated = ready.filter((sent) => sent.row.gateTags.length > 0)
      if (gated.length === 0) return senders.push(ready)
      gatekeeper.offer(gated)
      if (gated.length < ready.length) senders.push(ready.filter((sent) => sent.row.gateTags.length === 0))
    })

  /** Takes the rows in hand (deliver, deliverAt). */
  function carry(rows: ReadonlyArray<DeliveryRow>) {
    for (const row of rows) inHand.add(row.id)
  }

  /** Rows handed over ahead of their time wait for it here (`deliverAt`). */
  const early = yield* makeEarlyRelease<ClaimedRow>(deliver)

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

  /**
   * Outcomes, recorded in batches: retried until the database takes them, never dropped (the
   * triggers stay `running`, claimed by this live node, so no other node recovers them meanwhile).
   */
  const completer = Effect.gen(function*() {
    const batch = yield* Queue.takeBetween(completions, 1, COMPLETE_BATCH)
    const nowMs = yield* Clock.currentTimeMillis
    const gated = batch.filter((c) => c.row.gateTags.length > 0)
    const recorded = yield* retryUntilDone(
      "recording executions",
      executionsRecord({
        executions: batch.map((c) => c.execution),
        outcomes: batch.map((c) => c.outcome),
        gated: gated.map((c) => c.row.id),
        node,
        nowMs
      })
    )
    if (recorded < batch.length) {
      // recorded already (a retry after a lost answer), or taken over or recovered from this node
      // meanwhile, which logged those attempts as interrupted (store/executions.ts)
      yield* Effect.logInfo(`${batch.length - recorded} outcomes not recorded: their triggers' state had changed meanwhile`).pipe(
        Effect.annotateLogs({ event: "outcomes_dropped", outcomes: batch.length - recorded })
      )
    }
    unrecorded -= batch.length
    for (const { row } of batch) {
      if (row.fired !== null) fired.release(row.id)
      inHand.delete(row.id)
    }
    if (tracing !== null) for (const completion of batch) completion.recording?.recorded()
    for (const { execution } of batch) if (execution.isDeadLetter) yield* logDeadLetter(execution)
    yield* wakeups.wake(
      batch.flatMap((c) => c.outcome.retryAtMs === null ? [] : [{ shard: c.row.shard, id: c.outcome.id, dueAtMs: c.outcome.retryAtMs }])
    )
  })

  yield* forkLoop("delivery starter", starter, { afterFailure: 0 })
  yield* forkLoop("early release", early.releaseTurn, { afterFailure: 0 })
  yield* forkLoop("completer", completer, { afterFailure: 0 })

  /** Nothing left to send or record (a drain released the gates' waiters, and those handed over since). */
  const settled = () =>
    unstarted === 0 && unrecorded === 0 && senders.inFlight() === 0 && senders.size() === 0 && early.size() === 0 &&
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
        yield* Effect.logError(`${unrecorded} outcomes could not be recorded before stopping; crash recovery will resend them`)
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
    hold: fired.hold,
    holds: fired.holds,
    held: fired.held,
    carries: (id) => inHand.has(id),
    awaitRoom: (limit) => Effect.promise(() => senders.whenBelow(limit)),
    drain
  })
}))
