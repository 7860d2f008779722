// Housekeeping, every minute on every node, in two loops of their own so that a long retention sweep
// holds up nothing else: the chores (at start, then every minute) make the day partitions of the
// executions table ahead (today and the next days, store/executionPartitions.ts) and forget previous
// signing secrets whose rotation overlap has ended; retention (RETENTION_DAYS; 0 keeps everything),
// a minute after start and then a minute after each sweep ends, has a cutoff at the start of the UTC day
// that many days ago: it drops the partitions of the days before it, then deletes the finished triggers
// that last changed before it, with what executions of theirs are left (store/retention.ts). The cutoff
// moves a day at a time so that a day's triggers go after their day's partition: their attempts went
// with it, and are not deleted row by row with them (docs/operations.md "Retention"). Retention runs on
// one node at a time (an advisory lock; a node that finds it taken skips its turn); the trigger deletes
// go in batches of RETENTION_BATCH rows, each followed by a pause in proportion to the time it took, so
// that they keep PostgreSQL busy at most RETENTION_BUSY_PERCENT of the time and deliveries go on
// meanwhile; a sweep goes on until nothing is left past the cutoff (docs/operations.md "Retention").
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AppConfig, DEFAULTS } from "../config.ts"
import { dayStartMs } from "../domain/executionDays.ts"
import { Metrics } from "../metrics/metrics.ts"
import type { Database } from "../store/db.ts"
import { executionPartitionsDropBefore, executionPartitionsEnsure, executionsDefaultDeleteBefore } from "../store/executionPartitions.ts"
import { retentionSessionOpen } from "../store/retention.ts"
import { signingSecretsDropExpired } from "../store/signingSecrets.ts"

const DAY_MS = 24 * 60 * 60 * 1000

export interface HousekeepingOptions {
  readonly retentionDays: number
  /** Triggers per delete statement (default 500). */
  readonly batchSize?: number
  /** Share of the time the deletes of a sweep may take, in percent (default RETENTION_BUSY_PERCENT): the pause after a batch. */
  readonly busyPercent?: number
  /** The shortest pause after a batch of one sweep (default 10 ms). */
  readonly pauseMs?: number
  /** Pause between retention sweeps, and between the chores (default 60 s); also the wait before the first sweep. */
  readonly everyMs?: number
  /** Observer of the sweeps (tests); none in the service. */
  readonly onEvent?: (event: HousekeepingEvent) => Effect.Effect<void>
}

export type HousekeepingEvent =
  /** Retention sleeps until its next sweep. */
  | { readonly _tag: "Waiting" }
  /** The chores are done (partitions ahead, expired signing secrets); they sleep until their next turn. */
  | { readonly _tag: "Tidied" }
  /** One delete statement ran. */
  | { readonly _tag: "Batch"; readonly deleted: number }
  /** A sweep ended: nothing is left past the cutoff (or retention is off). */
  | { readonly _tag: "Swept"; readonly deleted: number }
  /** Another node holds the retention lock: this one skips its turn. */
  | { readonly _tag: "Busy" }
  /** Partitions of the executions table this node made or dropped (reported only when there are some). */
  | { readonly _tag: "Partitions"; readonly created: ReadonlyArray<string>; readonly dropped: ReadonlyArray<string> }

/**
 * The retention cutoff at `nowMs`: the start of the UTC day `retentionDays` days ago. A finished
 * trigger is kept at least `retentionDays` days after its last change and at most a day more.
 */
export const retentionCutoffMs = (nowMs: number, retentionDays: number): number => dayStartMs(nowMs - retentionDays * DAY_MS)

export const RETENTION_BATCH = 500
export const RETENTION_MIN_PAUSE_MS = 10
export const HOUSEKEEPING_EVERY_MS = 60_000

/**
 * The pause after a batch that took `busyMs`, so that batches and pauses together keep the database
 * busy `busyPercent` % of the time (no pause at 100); never shorter than `minPauseMs`.
 */
export const retentionPauseMs = (busyMs: number, busyPercent: number, minPauseMs: number): number =>
  busyPercent >= 100 ? 0 : Math.max(minPauseMs, busyMs * (100 - busyPercent) / busyPercent)

export interface PacedOptions {
  readonly batchSize: number
  readonly busyPercent: number
  readonly minPauseMs: number
  /** Told each batch's count. */
  readonly onBatch?: (deleted: number) => Effect.Effect<void>
}

/**
 * Runs `deleteBatch(batchSize)` until a batch deletes fewer than `batchSize` rows, each batch timed on
 * the Clock and followed by its pause (retentionPauseMs); the rows deleted in all.
 */
export const deletePaced = <E, R>(deleteBatch: (limit: number) => Effect.Effect<number, E, R>, options: PacedOptions) =>
  Effect.gen(function*() {
    let total = 0
    for (;;) {
      const startNs = yield* Clock.currentTimeNanos
      const deleted = yield* deleteBatch(options.batchSize)
      const busyMs = Number((yield* Clock.currentTimeNanos) - startNs) / 1e6
      total += deleted
      if (options.onBatch !== undefined) yield* options.onBatch(deleted)
      if (deleted < options.batchSize) return total
      const pauseMs = retentionPauseMs(busyMs, options.busyPercent, options.minPauseMs)
      if (pauseMs > 0) yield* Effect.sleep(pauseMs)
    }
  })

/** Makes the missing day partitions ahead; reports and counts those it made. */
const ensurePartitions = (options: HousekeepingOptions) =>
  Effect.gen(function*() {
    const created = yield* executionPartitionsEnsure(yield* Clock.currentTimeMillis)
    if (created.length === 0) return
    ;(yield* Metrics).partitionsCreated(created.length)
    yield* Effect.logInfo(`executions: made the partitions ${created.join(", ")}`)
    yield* (options.onEvent ?? (() => Effect.void))({ _tag: "Partitions", created, dropped: [] })
  })

/** The chores: the partitions ahead and the expired signing secrets. */
const tidy = (options: HousekeepingOptions) =>
  Effect.gen(function*() {
    yield* ensurePartitions(options)
    yield* signingSecretsDropExpired(yield* Clock.currentTimeMillis)
  })

/**
 * One sweep, the chores first (tidy), then retention (if this node gets the lock): the partitions
 * past the cutoff dropped, the default partition's executions past it deleted, and the finished
 * triggers batch by batch.
 */
export const sweep = (options: HousekeepingOptions) =>
  Effect.andThen(tidy(options), retentionSweep(options))

/** Retention's part of a sweep. */
const retentionSweep = (options: HousekeepingOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const report = options.onEvent ?? (() => Effect.void)
    const metrics = yield* Metrics
    const batchSize = options.batchSize ?? RETENTION_BATCH
    const nowMs = yield* Clock.currentTimeMillis
    if (options.retentionDays === 0) return yield* report({ _tag: "Swept", deleted: 0 })
    const session = yield* retentionSessionOpen
    if (session === undefined) return yield* report({ _tag: "Busy" })
    const beforeMs = retentionCutoffMs(nowMs, options.retentionDays)
    const dropped = yield* executionPartitionsDropBefore(beforeMs)
    if (dropped.length > 0) {
      metrics.partitionsDropped(dropped.length)
      yield* Effect.logInfo(`retention: dropped the partitions ${dropped.join(", ")} (executions before ${new Date(beforeMs).toISOString()})`)
      yield* report({ _tag: "Partitions", created: [], dropped })
    }
    const pacing = {
      batchSize,
      busyPercent: options.busyPercent ?? DEFAULTS.RETENTION_BUSY_PERCENT,
      minPauseMs: options.pauseMs ?? RETENTION_MIN_PAUSE_MS
    }
    // rows there only when days were not made ahead in time: deleted a batch at a time like triggers
    yield* deletePaced((limit) => executionsDefaultDeleteBefore({ beforeMs, limit }), pacing)
    const total = yield* deletePaced((limit) => session.deleteBatch({ beforeMs, limit }), {
      ...pacing,
      onBatch: (deleted) => Effect.andThen(Effect.sync(() => metrics.retentionDeleted(deleted)), report({ _tag: "Batch", deleted }))
    })
    if (total > 0) yield* Effect.logInfo(`retention: deleted ${total} finished triggers last changed before ${new Date(beforeMs).toISOString()}`)
    yield* report({ _tag: "Swept", deleted: total })
  }))

/** `effect` with its failures logged (`what` failed; its next turn comes), interruptions kept. */
const logged = <R>(effect: Effect.Effect<void, unknown, R>, what: string) =>
  effect.pipe(Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause as Cause.Cause<never>) : Effect.logWarning(`${what} failed; next turn later`, cause)))

/**
 * The two loops, side by side: the chores at once and then every `everyMs`; retention sweeps `everyMs`
 * apart (the first after `everyMs`), each as long as it takes, the chores going on meanwhile.
 */
export const runHousekeeping = (options: HousekeepingOptions): Effect.Effect<never, never, Database> => {
  const report = options.onEvent ?? (() => Effect.void)
  const everyMs = options.everyMs ?? HOUSEKEEPING_EVERY_MS
  // at start too: a database fresh from its migration has no days ahead
  const chores = Effect.forever(logged(tidy(options), "housekeeping").pipe(
    Effect.andThen(report({ _tag: "Tidied" })),
    Effect.andThen(Effect.sleep(everyMs))
  ))
  const retention = Effect.forever(report({ _tag: "Waiting" }).pipe(
    Effect.andThen(Effect.sleep(everyMs)),
    Effect.andThen(logged(retentionSweep(options), "retention"))
  ))
  return Effect.andThen(Effect.all([chores, retention], { concurrency: 2, discard: true }), Effect.never)
}

export const HousekeepingLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  yield* Effect.forkScoped(runHousekeeping({ retentionDays: config.retentionDays, busyPercent: config.retentionBusyPercent }))
}))
