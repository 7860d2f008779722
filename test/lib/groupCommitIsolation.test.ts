// Group commit isolates a failing input: a failed run of several inputs is settled again in halves
// until the input that fails by itself, so its neighbours succeed; a failure that concerns the whole
// group (transient, e.g. the database unreachable) or an interruption is not split.
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { isTransientFailure, makeGroupCommit } from "../../src/lib/groupCommit.ts"

/** Settles `inputs` concurrently (one batch): each call's output, or "failed". */
const settleAll = <I>(call: (input: I) => Effect.Effect<unknown, unknown>, inputs: ReadonlyArray<I>) =>
  Effect.map(
    Effect.all(inputs.map((input) => Effect.exit(call(input))), { concurrency: "unbounded" }),
    (exits) => exits.map((exit) => (Exit.isSuccess(exit) ? exit.value : "failed"))
  )

const range = (n: number) => Array.from({ length: n }, (_, i) => i)

describe("makeGroupCommit isolates a failing input", () => {
  it.effect("one poisoned input among 100: only it fails, in about 2·log2(n) extra runs", () =>
    Effect.gen(function*() {
      const runs: Array<number> = []
      const call = yield* makeGroupCommit({
        maxBatch: 1_000,
        run: (inputs: ReadonlyArray<number>) =>
          Effect.suspend(() => {
            runs.push(inputs.length)
            return inputs.includes(37) ? Effect.fail(new Error("poisoned row")) : Effect.succeed(inputs.map((n) => n * 10))
          })
      })
      const outputs = yield* settleAll(call, range(100))
      assert.deepStrictEqual(outputs, range(100).map((n) => (n === 37 ? "failed" : n * 10)))
      // the whole batch once, then two halves per level down to the single bad input
      assert.strictEqual(runs[0], 100)
      assert.isAtMost(runs.length, 1 + 2 * Math.ceil(Math.log2(100)), `runs ${runs.join(", ")}`)
    }).pipe(Effect.scoped))

  it.effect("the failing input gets its own failure; several bad inputs each fail alone", () =>
    Effect.gen(function*() {
      const call = yield* makeGroupCommit({
        maxBatch: 1_000,
        run: (inputs: ReadonlyArray<string>) =>
          Effect.suspend(() => {
            const bad = inputs.find((input) => input.startsWith("bad"))
            return bad === undefined ? Effect.succeed(inputs.map((input) => input.toUpperCase())) : Effect.fail(new Error(`cannot store ${bad}`))
          })
      })
      const inputs = ["a", "bad1", "b", "c", "d", "bad2", "e", "f", "g", "h", "bad3"]
      const exits = yield* Effect.all(inputs.map((input) => Effect.exit(call(input))), { concurrency: "unbounded" })
      inputs.forEach((input, i) => {
        const exit = exits[i]!
        if (input.startsWith("bad")) {
          assert.isTrue(Exit.isFailure(exit), input)
          if (Exit.isFailure(exit)) assert.include(String(exit.cause), `cannot store ${input}`)
        } else {
          assert.deepStrictEqual(exit, Exit.succeed(input.toUpperCase()))
        }
      })
    }).pipe(Effect.scoped))

  it.effect("a defect (a throw while building the statement) is isolated the same way", () =>
    Effect.gen(function*() {
      const call = yield* makeGroupCommit({
        maxBatch: 1_000,
        run: (inputs: ReadonlyArray<number>) =>
          Effect.sync(() => {
            if (inputs.includes(3)) throw new RangeError("Invalid string length")
            return inputs.map((n) => -n)
          })
      })
      assert.deepStrictEqual(yield* settleAll(call, range(8)), [-0, -1, -2, "failed", -4, -5, -6, -7])
    }).pipe(Effect.scoped))

  it.effect("groups are isolated independently: a bad input fails alone within its own group", () =>
    Effect.gen(function*() {
      const call = yield* makeGroupCommit({
        maxBatch: 1_000,
        groupOf: (input: string) => input[0]!,
        run: (inputs: ReadonlyArray<string>) =>
          inputs.some((input) => input.endsWith("!")) ? Effect.fail(new Error("bad")) : Effect.succeed(inputs.map((input) => input + "."))
      })
      assert.deepStrictEqual(
        yield* settleAll(call, ["a1", "b1", "a2!", "b2", "a3", "b3"]),
        ["a1.", "b1.", "failed", "b2.", "a3.", "b3."]
      )
    }).pipe(Effect.scoped))

  it.effect("a transient failure (isRetryable, e.g. the database unreachable) fails the group at once, unsplit", () =>
    Effect.gen(function*() {
      const runs: Array<number> = []
      const unreachable = Object.assign(new Error("connect ECONNREFUSED"), { isRetryable: true })
      const call = yield* makeGroupCommit({
        maxBatch: 1_000,
        run: (inputs: ReadonlyArray<number>) => Effect.suspend(() => (runs.push(inputs.length), Effect.fail(unreachable)))
      })
      const exits = yield* Effect.all(range(50).map((n) => Effect.exit(call(n))), { concurrency: "unbounded" })
      assert.isTrue(exits.every(Exit.isFailure))
      assert.deepStrictEqual(runs, [50])
    }).pipe(Effect.scoped))

  it.effect("failsWholeGroup decides which failures are not split", () =>
    Effect.gen(function*() {
      const runs: Array<number> = []
      const call = yield* makeGroupCommit({
        maxBatch: 1_000,
        failsWholeGroup: (error) => error instanceof Error && error.message === "Database unavailable",
        run: (inputs: ReadonlyArray<number>) =>
          Effect.suspend(() => (runs.push(inputs.length), Effect.fail(new Error("Database unavailable"))))
      })
      const exits = yield* Effect.all(range(20).map((n) => Effect.exit(call(n))), { concurrency: "unbounded" })
      assert.isTrue(exits.every(Exit.isFailure))
      assert.deepStrictEqual(runs, [20])
    }).pipe(Effect.scoped))

  it("isTransientFailure reads Effect's isRetryable convention", () => {
    assert.isTrue(isTransientFailure({ isRetryable: true }))
    assert.isFalse(isTransientFailure({ isRetryable: false }))
    assert.isFalse(isTransientFailure(new Error("22008 date/time field value out of range")))
    assert.isFalse(isTransientFailure(undefined))
    assert.isFalse(isTransientFailure("text"))
  })
})
