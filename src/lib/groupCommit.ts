// Group commit, the shared mechanism of the batchers (quota units, plain creates, claims): each call
// queues its input and awaits its own output; `rounds` fibers each take up to `maxBatch` queued inputs
// and settle them with one `run` per group (same `groupOf` key), groups concurrently. While a round
// runs the next batch fills, so batch sizes follow the load. A failing input fails alone: when the run
// of a group of several inputs fails, the group is settled again in halves (bisection), down to the
// input that fails by itself, so its neighbours succeed (about 2·log2(n) more runs for one bad input
// among n). A failure that concerns the whole group (`failsWholeGroup`, e.g. the database
// unreachable) or an interruption fails every call of the group at once, without splitting.
// Whatever goes wrong in a round outside a run (even a defect in `groupOf`) fails the calls of that
// round, is logged, and the next round goes on.
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { forkLoop } from "./backgroundLoop.ts"

interface Pending<I, O> {
  readonly input: I
  readonly done: Deferred.Deferred<O, unknown>
}

export const makeGroupCommit = <I, O, R>(options: {
  readonly maxBatch: number
  /** Rounds in flight at once (default 1). */
  readonly rounds?: number
  /** Inputs with the same key share a `run`; without it a round is one group. */
  readonly groupOf?: (input: I) => string
  /** Settles a group: one output per input, in the same order. */
  readonly run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, unknown, R>
  /** Names the loop in logs. */
  readonly name?: string
  /**
   * Whether a failed run's error concerns the whole group rather than one of its inputs: then every
   * call of the group fails with it at once instead of the group being settled again in halves.
   * Default `isTransientFailure`.
   */
  readonly failsWholeGroup?: (error: unknown) => boolean
}): Effect.Effect<(input: I) => Effect.Effect<O, unknown>, never, Scope.Scope | R> =>
  Effect.gen(function*() {
    const services = yield* Effect.context<R>()
    const queue = yield* Queue.unbounded<Pending<I, O>>()
    const failsWholeGroup = options.failsWholeGroup ?? isTransientFailure

    /** Whether to settle a failed group again in halves: several inputs, not interrupted, not group-wide. */
    const bisects = (size: number, cause: Cause.Cause<unknown>): boolean => {
      if (size < 2 || Cause.hasInterrupts(cause)) return false
      const error = Cause.findErrorOption(cause)
      return error._tag === "None" || !failsWholeGroup(error.value)
    }

    const settle = (group: ReadonlyArray<Pending<I, O>>): Effect.Effect<void> =>
      Effect.suspend(() => options.run(group.map((pending) => pending.input))).pipe(
        Effect.provideContext(services),
        Effect.matchCauseEffect({
          onSuccess: (outputs) => Effect.forEach(group, (pending, i) => Deferred.succeed(pending.done, outputs[i]!), { discard: true }),
          onFailure: (cause) => {
            if (!bisects(group.length, cause)) {
              return Effect.forEach(group, (pending) => Deferred.failCause(pending.done, cause), { discard: true })
            }
            const half = Math.ceil(group.length / 2)
            return Effect.all([settle(group.slice(0, half)), settle(group.slice(half))], { concurrency: 2, discard: true })
          }
        })
      )

    const groups = (batch: ReadonlyArray<Pending<I, O>>): Iterable<ReadonlyArray<Pending<I, O>>> => {
      const groupOf = options.groupOf
      if (groupOf === undefined) return [batch]
      const byKey = new Map<string, Array<Pending<I, O>>>()
      for (const pending of batch) {
        const key = groupOf(pending.input)
        const group = byKey.get(key)
        if (group === undefined) byKey.set(key, [pending])
        else group.push(pending)
      }
      return byKey.values()
    }

    const round = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, options.maxBatch)
      yield* Effect.suspend(() => Effect.forEach(groups(batch), settle, { concurrency: "unbounded", discard: true })).pipe(
        // settle never fails: this is a defect of the round itself; no call of the batch may wait forever
        Effect.tapCause((cause) => Effect.forEach(batch, (pending) => Deferred.failCause(pending.done, cause), { discard: true }))
      )
    })
    for (let i = 0; i < (options.rounds ?? 1); i++) {
      yield* forkLoop(options.name ?? "group commit", round, { afterFailure: 0 })
    }

    return (input: I) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<O, unknown>()
        yield* Queue.offer(queue, { input, done })
        return yield* Deferred.await(done)
      })
  })

/**
 * The default `failsWholeGroup`: an error that says it is retryable (`isRetryable: true`, Effect's
 * convention for transient conditions: an SqlError whose reason is a ConnectionError, a deadlock, a
 * timeout) is a condition of the moment, not of an input; settling halves would only repeat it.
 */
export const isTransientFailure = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (error as { readonly isRetryable?: unknown }).isRetryable === true
