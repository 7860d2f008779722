// Waiting in tests: for a state, never for a time. `pollUntil`/`waitUntil` poll a condition in real
// time (also under a TestClock) with a bounded deadline (`waitUntilAsync`: the same, for tests written
// with async/await); `realSleep` is only for the few e2e checks that something does *not* happen
// within a window.
import { Effect } from "effect"

/** Real time (the test body may run on a TestClock). */
export const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/**
 * Polls `probe` every `everyMs` (default 20) of real time until it returns a value other than
 * undefined; fails the test after `deadlineMs` (default 10 s).
 */
export const pollUntil = <A, E, R>(
  what: string,
  probe: Effect.Effect<A | undefined, E, R>,
  options: { readonly everyMs?: number; readonly deadlineMs?: number } = {}
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const every = options.everyMs ?? 20
    const deadline = Date.now() + (options.deadlineMs ?? 10_000)
    for (;;) {
      const value = yield* probe
      if (value !== undefined) return value
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* realSleep(every)
    }
  })

/** Polls `check` (an effect, or a plain function) every 20 ms of real time until it holds; fails after `timeoutMs`. */
export const waitUntil = <E = never, R = never>(
  what: string,
  check: Effect.Effect<boolean, E, R> | (() => boolean),
  timeoutMs = 10_000
): Effect.Effect<void, E, R> =>
  Effect.asVoid(pollUntil(
    what,
    Effect.map(Effect.isEffect(check) ? check : Effect.sync(check), (ok) => (ok ? true : undefined)),
    { deadlineMs: timeoutMs }
  ))

/**
 * waitUntil for tests written with async/await (those driving `npm start` processes): resolves once
 * `check` (a plain or an async function) holds, rejects after `timeoutMs`.
 */
export const waitUntilAsync = (check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> =>
  Effect.runPromise(waitUntil(what, Effect.promise(async () => check()), timeoutMs))
