// Background loops that never die silently: a loop body that fails (an error or a defect) is logged
// and the loop carries on after a pause; only interruption (the owner's scope closing) ends it.
// Every long-lived fiber of the service runs through `forkLoop`.
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

/**
 * Forks `body` in the current scope, repeated forever: after each run it waits `every` (default: runs
 * back to back), and after a failure (logged) it waits `afterFailure` (default 1 s) before the next.
 */
export const forkLoop = <E, R>(
  name: string,
  body: Effect.Effect<unknown, E, R>,
  options: { readonly every?: Duration.Input; readonly afterFailure?: Duration.Input } = {}
): Effect.Effect<void, never, R | Scope.Scope> => {
  const afterFailure = options.afterFailure ?? "1 second"
  const every = options.every
  const once = Effect.catchCause(body, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.andThen(Effect.logError(`${name} failed; carrying on`, cause), Effect.sleep(afterFailure)))
  const turn = every === undefined ? once : Effect.andThen(once, Effect.sleep(every))
  return Effect.asVoid(Effect.forkScoped(Effect.forever(turn)))
}

/** Backoff of `retryUntilDone`: 100 ms doubling, at most 5 s between attempts. */
const UNTIL_DONE = Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("5 seconds")])

/**
 * Runs `body` until it succeeds (work that must not be lost, e.g. recording outcomes while the
 * database is away): each failure is logged as a warning and retried after a backoff.
 */
export const retryUntilDone = <A, E, R>(name: string, body: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> =>
  body.pipe(
    Effect.tapCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning(`${name} failed; retrying`, cause)),
    Effect.retry(UNTIL_DONE),
    Effect.orDie
  )
