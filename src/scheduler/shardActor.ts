// One ShardActor per owned shard: a timer wheel holding the shard's triggers due within the next
// lookahead, a loader that treats PostgreSQL as the overflow wheel (reading the next window before
// the current one runs out), a mailbox of wake-ups, and the firing of whatever comes due.
// It sleeps until the fire instant of its earliest deadline (or a wake-up), so firing is not tied to
// polling; it fires ahead on a grid shared by every shard (fireReach: moving its shard's mark,
// store/shardMarks.ts, with the node's other shards firing then, and claiming keyed triggers through
// the node's ClaimBatcher) and hands the rows over for their due time (see SchedulerTiming in
// config.ts), which the dispatcher keeps. A fire goes at its grid instant, or a few milliseconds after
// it when a send comes due then (delivery/earlyRelease.ts quietFrom: every shard of the node finds the
// same moment).
// The actor is also its shard's materializer: every few seconds, and right after claiming
// a generator's instance, it creates the next instance of each active generator that has none.
// Triggers with a gated tag are handed over like any other (their gates admit them in memory:
// gates/gatekeeper.ts); those whose claim made them wait in PostgreSQL (keyed ones, instances) are
// announced to this node's gates.
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Semaphore from "effect/Semaphore"
import { type GateRef, isGateKick, type ShardMessage } from "../cluster/wakeups.ts"
import { SchedulerTiming, type SchedulerTimingShape } from "../config.ts"
import { Dispatcher } from "../delivery/dispatcher.ts"
import { nextInstanceAfter } from "../domain/generator.ts"
import { uuidv7 } from "../domain/ids.ts"
import type { ClaimedRow } from "../domain/trigger.ts"
import { Gatekeeper } from "../gates/gatekeeper.ts"
import { Metrics } from "../metrics/metrics.ts"
import { generatorsWithoutUpcoming, instancesInsert } from "../store/generators.ts"
import { type Presence, presenceHeld } from "../store/nodePresence.ts"
import { type FetchCursor, type FiredRow, triggersFetchFired, triggersTakeOverFired, triggersUnderMark } from "../store/firedTriggers.ts"
import { BEGINNING_MS, triggersLoadDue, triggersRecover } from "../store/schedulerQueries.ts"
import { shardMarkTakeOver } from "../store/shardMarks.ts"
import { makeAlarm } from "../lib/alarm.ts"
import { stageTrace } from "../lib/stageTrace.ts"
import { withTransaction } from "../store/transaction.ts"
import { ClaimBatcher } from "./claimBatcher.ts"
import { MarkBatcher } from "./markBatcher.ts"
import type { ShardMailbox } from "./shardMailbox.ts"
import { Heartbeats } from "./heartbeats.ts"
import { TimerWheel } from "./timerWheel.ts"

const LOAD_LIMIT = 5_000
const CLAIM_CHUNK = 1_000
const MATERIALIZE_BATCH = 1_000
const CLAIM_RETRY_MS = 1_000
/**
 * Fired triggers fetched per statement: a first page small enough that every shard's comes back
 * within a few milliseconds of a burst's time (the first arrivals do not wait behind 64 shards'
 * whole bursts), then the rest of the shard's burst in large pages.
 */
const FIRST_FETCH_PAGE = 64
const FETCH_PAGE = 256
/**
 * While this many rows wait for a sender, no later page is fetched (and only `laterPages` of the
 * node's shards fetch one at a time): a burst is read as it is sent, and the node holds a bounded
 * number of rows, few enough to die young rather than be promoted through a small young generation.
 */
const BACKLOG_LIMIT = 512

/**
 * Where a shard's periodic work falls within its period, in [0, 1): shards are spread evenly (golden
 * ratio steps) so 64 actors started together don't query PostgreSQL in the same millisecond, which
 * stalled the event loop (and every trigger due then) for tens of milliseconds.
 */
export const shardPhase = (shard: number): number => (shard * 0.6180339887498949) % 1

/**
 * Every shard of every node fires on one grid of instants, `fireEveryMs` apart: a fire at a grid
 * instant reaches `claimLeadMs + fireWindowMs` past it (never further ahead of the clock), so a
 * trigger is read at least `claimLeadMs + fireWindowMs - fireEveryMs` before its time (its fire's
 * round trip, on a busy node, is not part of its lateness), and the node's shards that fire at an
 * instant share its statements (markBatcher.ts).
 */
export const fireReach = (nowMs: number, timing: Pick<SchedulerTimingShape, "claimLeadMs" | "fireWindowMs" | "fireEveryMs">) =>
  Math.floor(nowMs / timing.fireEveryMs) * timing.fireEveryMs + timing.claimLeadMs + timing.fireWindowMs

/** The grid instant whose fire first reaches a trigger due at `dueAtMs` (see fireReach). */
export const fireInstantFor = (dueAtMs: number, timing: Pick<SchedulerTimingShape, "claimLeadMs" | "fireWindowMs" | "fireEveryMs">) =>
  Math.ceil((dueAtMs - timing.claimLeadMs - timing.fireWindowMs) / timing.fireEveryMs) * timing.fireEveryMs

/** The shard's mark is held by another node now: this actor must fire nothing more. */
export class ShardTakenOver extends Error {
  readonly shard: number
  constructor(shard: number) {
    super(`shard ${shard} was taken over by another node`)
    this.shard = shard
  }
}

/** What an actor reports to an observer (tests await these instead of waiting on the wall clock). */
export type ShardActorEvent =
  /** It has done everything due and sleeps until `wakeAtMs` or a wake-up. */
  | { readonly _tag: "Idle"; readonly wakeAtMs: number }
  | { readonly _tag: "Claimed"; readonly ids: ReadonlyArray<string> }
  | { readonly _tag: "Recovered"; readonly ids: ReadonlyArray<string> }
  /** It took over its shard's mark from another node and dealt with what that node left fired. */
  | { readonly _tag: "TookOver"; readonly previousNode: string; readonly left: number }
  | { readonly _tag: "Materialized"; readonly ids: ReadonlyArray<string> }

export interface ShardActorOptions {
  readonly shard: number
  readonly node: string
  readonly mailbox: ShardMailbox
  /** Who is connected now, and for how long the database has been up (for crash recovery). */
  readonly presence: Effect.Effect<Presence, unknown>
  /**
   * Turns of the node's shards at fetching the later pages of large bursts (owned by the shard
   * manager): one or two at a time, so that the backlog they fill stays near BACKLOG_LIMIT.
   */
  readonly laterPages: Semaphore.Semaphore
  /** Observer of the actor's progress (tests); none in the service. */
  readonly onEvent?: (event: ShardActorEvent) => Effect.Effect<void>
}

export const runShardActor = (options: ShardActorOptions) =>
  Effect.gen(function*() {
    const dispatcher = yield* Dispatcher
    const gatekeeper = yield* Gatekeeper
    const claims = yield* ClaimBatcher
    const marks = yield* MarkBatcher
    const heartbeats = yield* Heartbeats
    const timing = yield* SchedulerTiming
    const metrics = yield* Metrics
    const report = options.onEvent ?? (() => Effect.void)
    const clock = yield* Clock.Clock
    const startMs = clock.currentTimeMillisUnsafe()
    /** The wait for the next deadline, rung by a wake-up in the mailbox (lib/alarm.ts). */
    const alarm = yield* makeAlarm
    const wheel = new TimerWheel({ nowMs: startMs })
    const phase = shardPhase(options.shard)
    /** The next window is read when the loaded one has less than this left (15–45 s, by phase). */
    const reloadMarginMs = Math.round(timing.lookaheadMs / 4 + phase * timing.lookaheadMs / 2)
    /** Every pending trigger due before this instant is in the wheel. */
    let loadedUntil = BEGINNING_MS
    let loadedAfterId: string | null = null
    let nextRecoverAt = startMs
    let nextMaterializeAt = startMs
    /** The shard's mark: every fired trigger due at or before it has been fetched (or swept, below). */
    let firedAtMs = -Infinity
    /** The mark when the shard was last swept; a sweep is due whenever the mark moved since. */
    let sweptAtMarkMs = -Infinity

    /** Tells this node's gates that triggers came to wait for them in PostgreSQL. */
    const kickGates = (held: ReadonlyArray<{ readonly projectId: string; readonly gateTags: ReadonlyArray<string> }>) =>
      Effect.sync(() => gatekeeper.kick(held.flatMap((row): Array<GateRef> => row.gateTags.map((tag) => ({ projectId: row.projectId, tag })))))

    /** Next instances for active generators without an upcoming one; never catches up missed times. */
    const materialize = (nowMs: number) =>
      Effect.gen(function*() {
        for (;;) {
          const generators = yield* generatorsWithoutUpcoming({ shard: options.shard, limit: MATERIALIZE_BATCH })
          const instances = generators.flatMap((generator) => {
            // after what a fire covers: an instance claimed just now (up to that much early) is not the next one
            const scheduledAtMs = nextInstanceAfter(generator, nowMs + timing.claimLeadMs + timing.fireWindowMs)
            return scheduledAtMs === null ? [] : [{ generatorId: generator.id, instanceId: uuidv7(nowMs), scheduledAtMs }]
          })
          const created = yield* instancesInsert({ instances, nowMs })
          metrics.triggersCreated("materializer", "job", created.length)
          if (created.length > 0) yield* report({ _tag: "Materialized", ids: created.map((row) => row.id) })
          const times = new Map(instances.map((instance) => [instance.instanceId, instance.scheduledAtMs]))
          for (const row of created) {
            const dueAtMs = times.get(row.id)!
            if (dueAtMs < loadedUntil) wheel.add(row.id, dueAtMs)
          }
          if (generators.length < MATERIALIZE_BATCH || created.length === 0) break
        }
        yield* heartbeats.beat("materializer")
        nextMaterializeAt = nowMs + timing.materializeEveryMs
      })

    const load = (nowMs: number) =>
      Effect.gen(function*() {
        const until = nowMs + timing.lookaheadMs
        const rows = yield* triggersLoadDue({
          shard: options.shard, fromMs: loadedUntil, afterId: loadedAfterId, untilMs: until, limit: LOAD_LIMIT
        })
        for (const row of rows) wheel.add(row.id, row.dueAtMs)
        // a full page ends the window at its last row (keyset on time and id); the next load goes on
        // from there, so even thousands of triggers due in one millisecond are read page by page
        const last = rows.length === LOAD_LIMIT ? rows[rows.length - 1]! : undefined
        loadedUntil = last?.dueAtMs ?? until
        loadedAfterId = last?.id ?? null
      })

    /**
     * Triggers claimed by nodes that are gone are sent again. Right after the database (re)started
     * nobody is connected yet: wait until the nodes that are alive have had time to come back.
     */
    const recover = (nowMs: number) =>
      Effect.gen(function*() {
        if (firedAtMs > sweptAtMarkMs) yield* sweep
        const presence = yield* options.presence
        if (presence.serverUpMs < timing.restartGraceMs) {
          nextRecoverAt = nowMs + timing.restartGraceMs - presence.serverUpMs
          return
        }
        nextRecoverAt = nowMs + timing.recoverEveryMs
        const { ids, gated } = yield* triggersRecover({ shard: options.shard, node: options.node, liveNodes: presence.nodes, nowMs })
        if (ids.length + gated.length > 0) {
          yield* Effect.logInfo(`shard ${options.shard}: recovered ${ids.length + gated.length} triggers left by a stopped node`).pipe(
            Effect.annotateLogs({ event: "recovered", shard: options.shard, triggers: ids.length + gated.length })
          )
          yield* dispatcher.submit(ids)
          yield* kickGates(gated)
          yield* report({ _tag: "Recovered", ids })
        }
      })

    /** Hands claimed or fired rows to the dispatcher, each sent at its due time (now, or within the fire's lead). */
    const handOver = (claimed: ReadonlyArray<ClaimedRow>) => dispatcher.deliverAt(claimed)

    /** Claims triggers one by one (keyed, instances, gated: the mark does not cover them) and hands them on. */
    const claimAndHandOver = (ids: ReadonlyArray<string>, untilMs: number) =>
      Effect.gen(function*() {
        const nowMs = clock.currentTimeMillisUnsafe()
        for (let i = 0; i < ids.length; i += CLAIM_CHUNK) {
          const claimed = yield* claims.claim(ids.slice(i, i + CLAIM_CHUNK), untilMs)
          if (claimed.length === 0) continue
          yield* report({ _tag: "Claimed", ids: claimed.map((row) => row.id) })
          const held = claimed.filter((row) => row.gateTags.length > 0)
          yield* handOver(held.length === 0 ? claimed : claimed.filter((row) => row.gateTags.length === 0))
          yield* kickGates(held)
          if (claimed.some((row) => row.generatorId !== null)) nextMaterializeAt = nowMs
        }
      })

    /** What a fetch of fired triggers returned: sent from memory (held), or claimed when the mark does not cover them. */
    const handFired = (page: ReadonlyArray<FiredRow>, untilMs: number) =>
      Effect.gen(function*() {
        const direct = dispatcher.hold(page.filter((fired) => !fired.claimNeeded).map((fired) => fired.row))
        if (direct.length > 0) {
          yield* report({ _tag: "Claimed", ids: direct.map((row) => row.id) })
          yield* handOver(direct)
        }
        const toClaim = page.filter((fired) => fired.claimNeeded)
        if (toClaim.length > 0) yield* claimAndHandOver(toClaim.map((fired) => fired.row.id), untilMs)
      })

    /**
     * Fires the shard up to `untilMs`: moves its mark there (store/shardMarks.ts), then fetches what
     * the move covers — the range after the old mark a page at a time (a later page only once the
     * senders have room), and `lateIds` (wake-ups of triggers that landed under the old mark) — and
     * hands it over. Not interruptible but between pages: a node stopping meanwhile still hands over
     * what it fetched.
     */
    const fire = (lateIds: ReadonlyArray<string>, untilMs: number) =>
      lateIds.length === 0 && untilMs > firedAtMs ? fireAhead(untilMs) : fireFrom(lateIds, untilMs, undefined)

    /**
     * The common fire (a grid instant, no late wake-ups): the mark moves and the first page comes
     * back in the node's round (markBatcher.ts). A page shorter than FIRST_FETCH_PAGE is the whole
     * range: its rows are handed over right here, with no further step; otherwise `fireFrom` goes on.
     */
    const fireAhead = (untilMs: number) =>
      Effect.suspend(() => {
        const afterMs = firedAtMs
        const wokeMs = stageTrace === null ? 0 : clock.currentTimeMillisUnsafe()
        return Effect.flatMap(marks.fire({ shard: options.shard, afterMs, untilMs, limit: FIRST_FETCH_PAGE }), (page) => {
          if (page === null) return Effect.fail(new ShardTakenOver(options.shard))
          firedAtMs = untilMs
          if (stageTrace !== null || page.length >= FIRST_FETCH_PAGE || page.some((fired) => fired.claimNeeded)) {
            return fireFrom([], untilMs, { afterMs, page, wokeMs })
          }
          const direct = dispatcher.hold(page.map((fired) => fired.row))
          return direct.length === 0
            ? Effect.void
            : Effect.andThen(report({ _tag: "Claimed", ids: direct.map((row) => row.id) }), handOver(direct))
        })
      }).pipe(Effect.uninterruptible)

    /** A fire from the shard's mark, or on from a first page already read (`read`). */
    const fireFrom = (
      lateIds: ReadonlyArray<string>,
      untilMs: number,
      read: { readonly afterMs: number; readonly page: ReadonlyArray<FiredRow>; readonly wokeMs: number } | undefined
    ) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const afterMs = read?.afterMs ?? firedAtMs
        const wokeMs = read?.wokeMs ?? (stageTrace === null ? 0 : clock.currentTimeMillisUnsafe())
        const late = lateIds.filter((id) => !dispatcher.holds(id))
        /** The first page, read in the node's round of fires right after the mark moved (markBatcher.ts). */
        let first: ReadonlyArray<FiredRow> | undefined = read?.page
        if (read === undefined && untilMs > afterMs) {
          if (late.length === 0) {
            const page = yield* marks.fire({ shard: options.shard, afterMs, untilMs, limit: FIRST_FETCH_PAGE })
            if (page === null) return yield* Effect.fail(new ShardTakenOver(options.shard))
            first = page
          } else if (!(yield* marks.advance(options.shard, untilMs))) return yield* Effect.fail(new ShardTakenOver(options.shard))
          firedAtMs = untilMs
        }
        const markedMs = stageTrace === null ? 0 : clock.currentTimeMillisUnsafe()
        let cursor: FetchCursor | null = null
        for (;;) {
          const limit = cursor === null ? FIRST_FETCH_PAGE : FETCH_PAGE
          const fetchPage = Effect.gen(function*() {
            const read = first
            first = undefined
            const page: ReadonlyArray<FiredRow> = read ?? (yield* triggersFetchFired({
              shard: options.shard, afterMs, untilMs: firedAtMs, lateIds: late, cursor, limit,
              nowMs: clock.currentTimeMillisUnsafe()
            }))
            if (stageTrace !== null) {
              const ids = page.map((fired) => fired.row.id)
              stageTrace.mark(ids, "woke", wokeMs)
              stageTrace.mark(ids, "marked", markedMs)
              stageTrace.mark(ids, "fetched", clock.currentTimeMillisUnsafe())
            }
            yield* handFired(page, firedAtMs)
            return page
          })
          // a first page goes at once; a later one waits for its turn and for room among the senders
          // (a stop may come meanwhile: the rest stays fired, and a stopping node gives it back)
          const page: ReadonlyArray<FiredRow> = cursor === null
            ? yield* fetchPage
            : yield* options.laterPages.withPermit(
              Effect.andThen(Effect.interruptible(dispatcher.awaitRoom(BACKLOG_LIMIT)), fetchPage)
            )
          const range = page.filter((fired: FiredRow) => fired.row.dueAtMs > afterMs)
          if (range.length < limit) return
          cursor = range[range.length - 1]!.cursor
        }
      }))

    /** Fired triggers (and unclaimed ones under the mark) that this node does not hold: sent now. */
    const sweep = Effect.gen(function*() {
      const markMs = firedAtMs
      const unheld = (yield* triggersUnderMark(options.shard)).filter((id) => !dispatcher.holds(id))
      if (unheld.length > 0) {
        yield* Effect.logInfo(`shard ${options.shard}: sending ${unheld.length} fired triggers no node held`).pipe(
          Effect.annotateLogs({ event: "swept", shard: options.shard, triggers: unheld.length })
        )
        yield* fire(unheld, markMs)
      }
      sweptAtMarkMs = markMs
    })

    const fireDue = (nowMs: number) =>
      Effect.gen(function*() {
        const untilMs = fireReach(nowMs, timing)
        // the wheel's time is the mark's: what it yields up to the mark landed under it after it moved
        const late = firedAtMs === -Infinity ? [] : wheel.advance(firedAtMs)
        const due = [...late, ...wheel.advance(untilMs)]
        if (due.length === 0) return
        yield* fire(late, untilMs).pipe(
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause) || Cause.squash(cause) instanceof ShardTakenOver
              ? Effect.failCause(cause)
              : Effect.sync(() => {
                // fired or not, each is looked at again in a second, and the sweep finds what the mark covers
                for (const id of due) wheel.add(id, nowMs + CLAIM_RETRY_MS)
                nextRecoverAt = Math.min(nextRecoverAt, nowMs + CLAIM_RETRY_MS)
                sweptAtMarkMs = -Infinity
              }).pipe(Effect.andThen(Effect.logWarning(`shard ${options.shard}: firing failed, retrying`, cause))))
        )
      })

    /**
     * The shard's mark becomes this node's. What the previous holder fired and did not record is
     * dealt with (store/firedTriggers.ts triggersTakeOverFired). That node is alive when it handed
     * the shard over (the mark says so, store/shardMarks.ts) and still holds its presence lock
     * (store/nodePresence.ts): not from the second-old list of live nodes, which still names a node
     * killed within that second, nor from the presence lock alone, which a dying session may still
     * hold for a moment after its shard locks are gone. Right after the database restarted every
     * node counts as alive (they may not have reconnected yet), so nothing is sent twice.
     */
    const takeOver = (nowMs: number) =>
      withTransaction(Effect.gen(function*() {
        const mark = yield* shardMarkTakeOver({ shard: options.shard, node: options.node })
        if (mark.previousNode !== options.node && mark.previousNode !== "" && mark.firedAtMs > -Infinity) {
          const previous = yield* presenceHeld(mark.previousNode)
          const previousAlive = previous.serverUpMs < timing.restartGraceMs || (mark.handedOver && previous.held)
          const left = yield* triggersTakeOverFired({ shard: options.shard, previousNode: mark.previousNode, previousAlive, nowMs })
          if (left > 0) {
            yield* Effect.logInfo(`shard ${options.shard}: took over ${left} fired triggers of ${previousAlive ? "live" : "stopped"} node ${mark.previousNode}`)
              .pipe(Effect.annotateLogs({ event: "took_over", shard: options.shard, triggers: left, alive: previousAlive }))
          }
          yield* report({ _tag: "TookOver", previousNode: mark.previousNode, left })
        }
        return mark.firedAtMs
      }))

    const apply = (items: ReadonlyArray<ShardMessage>, nowMs: number) => {
      for (const item of items) {
        if (isGateKick(item)) gatekeeper.kick([item.gate])
        else if (item.dueAtMs !== null && item.dueAtMs < loadedUntil) wheel.add(item.id, item.dueAtMs)
        else wheel.cancel(item.id) // gone, or beyond the window: the loader brings it back in time
      }
    }

    firedAtMs = yield* takeOver(startMs)
    // fired triggers are this node's (held, or swept now): the wheel starts at the mark
    loadedUntil = Math.max(BEGINNING_MS, firedAtMs)
    yield* sweep
    yield* load(startMs)
    yield* recover(startMs)
    yield* materialize(startMs)
    // from here on each periodic task runs at this shard's phase of its period
    // (whole milliseconds: a clock that wakes a fraction early would otherwise find nothing due, again and again)
    nextRecoverAt = Math.min(nextRecoverAt, startMs + Math.round(phase * timing.recoverEveryMs))
    nextMaterializeAt = startMs + Math.round(phase * timing.materializeEveryMs)
    options.mailbox.listen(alarm.ring)
    for (;;) {
      const nowMs = clock.currentTimeMillisUnsafe()
      yield* fireDue(nowMs)
      if (loadedUntil - nowMs <= reloadMarginMs) yield* load(nowMs)
      if (nowMs >= nextRecoverAt) yield* recover(nowMs)
      if (nowMs >= nextMaterializeAt) yield* materialize(nowMs)
      // a fire goes at its grid instant or a few ms after it, when no send comes due (earlyRelease.ts)
      const fireAt = fireInstantFor(wheel.nextDeadlineMs() ?? Infinity, timing)
      const wakeAt = Math.min(
        fireAt > nowMs ? dispatcher.quietFrom(fireAt) : fireAt,
        loadedUntil - reloadMarginMs,
        nextRecoverAt,
        nextMaterializeAt
      )
      if (wakeAt > clock.currentTimeMillisUnsafe()) {
        yield* report({ _tag: "Idle", wakeAtMs: wakeAt })
        if (options.mailbox.size === 0) yield* alarm.waitUntil(wakeAt)
      }
      apply(options.mailbox.take(10_000), clock.currentTimeMillisUnsafe())
    }
  }).pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Cause.squash(cause) instanceof ShardTakenOver
        // another node holds the shard (this node's lock session is gone): its manager stops this actor
        ? Effect.andThen(Effect.logWarning(`shard ${options.shard}: taken over by another node; firing stopped`), Effect.never)
        : Effect.logError(`shard ${options.shard} actor failed; restarting`, cause)
    ),
    Effect.andThen(Effect.sleep(1_000)),
    Effect.forever
  )
