// Group commit, the shared mechanism of the batchers (quota units, plain creates, claims): each call
// queues its input and gets its own output; `rounds` fibers each take up to `maxBatch` queued inputs
// and settle them with one `run` per group (same `groupOf` key), groups concurrently. While a round
// runs the next batch fills, so batch sizes follow the load; a round waiting for input is woken on the
// next turn of the event loop (setImmediate), so the calls arriving together (every request Node
// parsed in one turn) share a run. A failing input fails alone: when the run
// of a group of several inputs fails, the group is settled again in halves (bisection), down to the
// input that fails by itself, so its neighbours succeed (about 2·log2(n) more runs for one bad input
// among n). A failure that concerns the whole group (`failsWholeGroup`, e.g. the database
// unreachable) or an interruption fails every call of the group at once, without splitting.
// Whatever goes wrong in a round outside a run (even a defect in `groupOf`) fails the calls of that
// round, is logged, and the next round goes on. Calls still queued when the owner's scope closes are
// settled as interrupted.
// A call is either an Effect (`call`) or, for a caller outside any fiber (api/fastLane.ts), a plain
// callback (`offer`): queueing costs no fiber, Deferred or queue of Effect's, and the output is handed
// straight to the callback when its run ends.
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { forkLoop } from "./backgroundLoop.ts"

interface Pending<I, O> {
  readonly input: I
  settle: ((exit: Exit.Exit<O, unknown>) => void) | undefined
}

/** Hands a call its outcome, once (a round's defect after a settled run must not settle it again). */
const settleOnce = <I, O>(pending: Pending<I, O>, exit: Exit.Exit<O, unknown>): void => {
  const settle = pending.settle
  if (settle === undefined) return
  pending.settle = undefined
  settle(exit)
}

export interface GroupCommit<I, O> {
  /** Queues the input; the Effect ends with its output. */
  readonly call: (input: I) => Effect.Effect<O, unknown>
  /**
   * Queues the input; `settle` gets its outcome from the round's fiber (it must not throw). For
   * callers outside any fiber.
   */
  readonly offer: (input: I, settle: (exit: Exit.Exit<O, unknown>) => void) => void
}

export interface GroupCommitOptions<I, O, R> {
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
}

export const makeGroupCommitQueue = <I, O, R>(
  options: GroupCommitOptions<I, O, R>
): Effect.Effect<GroupCommit<I, O>, never, Scope.Scope | R> =>
  Effect.gen(function*() {
    const services = yield* Effect.context<R>()
    const failsWholeGroup = options.failsWholeGroup ?? isTransientFailure
    let queued: Array<Pending<I, O>> = []
    /** Rounds waiting for input, and whether their wake-up is already scheduled. */
    let waiting: Array<() => void> = []
    let wakeScheduled = false
    const wake = () => {
      wakeScheduled = false
      const rounds = waiting
      waiting = []
      for (const resume of rounds) resume()
    }
    const enqueue = (pending: Pending<I, O>) => {
      queued.push(pending)
      if (waiting.length > 0 && !wakeScheduled) {
        wakeScheduled = true
        setImmediate(wake)
      }
    }
    const takeQueued = (): Array<Pending<I, O>> => {
      if (queued.length <= options.maxBatch) {
        const batch = queued
        queued = []
        return batch
      }
      return queued.splice(0, options.maxBatch)
    }
    /** Up to maxBatch queued inputs, waiting for the first when there is none. */
    const nextBatch: Effect.Effect<Array<Pending<I, O>>> = Effect.callback<Array<Pending<I, O>>>((resume) => {
      if (queued.length > 0) return resume(Effect.sync(takeQueued))
      const round = () => resume(Effect.sync(takeQueued))
      waiting.push(round)
      return Effect.sync(() => void (waiting = waiting.filter((other) => other !== round)))
    })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        const left = queued
        queued = []
        for (const pending of left) settleOnce(pending, Exit.interrupt())
      })
    )

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
          onSuccess: (outputs) =>
            Effect.sync(() => {
              for (let i = 0; i < group.length; i++) settleOnce(group[i]!, Exit.succeed(outputs[i]!))
            }),
          onFailure: (cause) => {
            if (!bisects(group.length, cause)) {
              return Effect.sync(() => {
                for (const pending of group) settleOnce(pending, Exit.failCause(cause))
              })
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
      const batch = yield* nextBatch
      // another round may have taken what was queued between this one's wake-up and its turn
      if (batch.length === 0) return
      yield* Effect.suspend(() => Effect.forEach(groups(batch), settle, { concurrency: "unbounded", discard: true })).pipe(
        // settle never fails: this is a defect of the round itself; no call of the batch may wait forever
        Effect.tapCause((cause) => Effect.sync(() => {
          for (const pending of batch) settleOnce(pending, Exit.failCause(cause))
        }))
      )
    })
    for (let i = 0; i < (options.rounds ?? 1); i++) {
      yield* forkLoop(options.name ?? "group commit", round, { afterFailure: 0 })
    }

    return {
      call: (input: I) =>
        Effect.callback<O, unknown>((resume) => {
          enqueue({ input, settle: resume })
        }),
      offer: (input: I, settle: (exit: Exit.Exit<O, unknown>) => void) => enqueue({ input, settle })
    }
  })

/** The group commit as one function per call: see `makeGroupCommitQueue`. */
export const makeGroupCommit = <I, O, R>(
  options: GroupCommitOptions<I, O, R>
): Effect.Effect<(input: I) => Effect.Effect<O, unknown>, never, Scope.Scope | R> =>
  Effect.map(makeGroupCommitQueue(options), (queue) => queue.call)

/**
 * The default `failsWholeGroup`: an error that says it is retryable (`isRetryable: true`, Effect's
 * convention for transient conditions: an SqlError whose reason is a ConnectionError, a deadlock, a
 * timeout) is a condition of the moment, not of an input; settling halves would only repeat it.
 */
export const isTransientFailure = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (error as { readonly isRetryable?: unknown }).isRetryable === true
