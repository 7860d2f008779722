// Group commit: concurrent calls share runs (one per group key), each call gets the output at its own
// position, and a failing run fails the calls of its group only; a caller outside any fiber queues
// with a callback (`offer`) and shares the same runs.
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Scope } from "effect"
import { makeGroupCommit, makeGroupCommitQueue } from "../../src/lib/groupCommit.ts"

describe("makeGroupCommit", () => {
  it.effect("runs each group once for calls queued together and hands every call its own output", () =>
    Effect.gen(function*() {
      const runs: Array<ReadonlyArray<string>> = []
      const call = yield* makeGroupCommit({
        maxBatch: 100,
        groupOf: (input: string) => input[0]!,
        run: (inputs) =>
          Effect.sync(() => {
            runs.push(inputs)
            if (inputs[0]!.startsWith("x")) throw new Error("group x fails")
            return inputs.map((input) => input.toUpperCase())
          })
      })
      const exits = yield* Effect.all(["a1", "b1", "a2", "x1", "b2", "a3", "x2"].map((input) => Effect.exit(call(input))), {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual(
        exits.map((exit) => (Exit.isSuccess(exit) ? exit.value : "failed")),
        ["A1", "B1", "A2", "failed", "B2", "A3", "failed"]
      )
      // group x fails as a whole, then (bisection) each of its inputs alone
      assert.deepStrictEqual([...runs].sort(), [["a1", "a2", "a3"], ["b1", "b2"], ["x1"], ["x1", "x2"], ["x2"]])
    }).pipe(Effect.scoped))

  it.effect("takes at most maxBatch inputs per run", () =>
    Effect.gen(function*() {
      const sizes: Array<number> = []
      const call = yield* makeGroupCommit({
        maxBatch: 3,
        run: (inputs: ReadonlyArray<number>) => Effect.sync(() => (sizes.push(inputs.length), inputs.map((n) => n * 2)))
      })
      const outputs = yield* Effect.all(Array.from({ length: 10 }, (_, i) => call(i)), { concurrency: "unbounded" })
      assert.deepStrictEqual(outputs, Array.from({ length: 10 }, (_, i) => i * 2))
      assert.isTrue(sizes.every((size) => size <= 3), `run sizes ${sizes.join(", ")}`)
      assert.strictEqual(sizes.reduce((a, b) => a + b, 0), 10)
    }).pipe(Effect.scoped))

  it.effect("a defect in groupOf fails the calls of its round, is logged, and later rounds go on", () =>
    Effect.gen(function*() {
      const call = yield* makeGroupCommit({
        maxBatch: 100,
        groupOf: (input: string) => {
          if (input === "poison") throw new Error("groupOf defect")
          return "all"
        },
        run: (inputs) => Effect.succeed(inputs.map((input) => input.toUpperCase()))
      })
      const poisoned = yield* Effect.exit(call("poison"))
      assert.isTrue(Exit.isFailure(poisoned))
      // the loop survived the defect: the next calls are settled as usual
      assert.deepStrictEqual(yield* Effect.all([call("a"), call("b")], { concurrency: "unbounded" }), ["A", "B"])
    }).pipe(Effect.scoped))

  it.effect("a callback caller shares the runs of the Effect callers and gets its own output or failure", () =>
    Effect.gen(function*() {
      const runs: Array<ReadonlyArray<string>> = []
      const queue = yield* makeGroupCommitQueue({
        maxBatch: 100,
        run: (inputs: ReadonlyArray<string>) =>
          Effect.sync(() => {
            runs.push(inputs)
            if (inputs.includes("bad")) throw new Error("bad input")
            return inputs.map((input) => input.toUpperCase())
          })
      })
      const settled = new Map<string, Exit.Exit<string, unknown>>()
      const allSettled = yield* Deferred.make<void>()
      for (const input of ["a", "bad"]) {
        queue.offer(input, (exit) => {
          settled.set(input, exit)
          if (settled.size === 2) Deferred.doneUnsafe(allSettled, Exit.void)
        })
      }
      const viaEffect = yield* queue.call("b")
      yield* Deferred.await(allSettled)
      assert.strictEqual(viaEffect, "B")
      const a = settled.get("a")!
      assert.isTrue(Exit.isSuccess(a) && a.value === "A")
      assert.isTrue(Exit.isFailure(settled.get("bad")!))
      // one run for the three, then bisection isolates the bad input
      assert.deepStrictEqual(runs[0], ["a", "bad", "b"])
    }).pipe(Effect.scoped))

  it.effect("calls still queued when the owner's scope closes are settled as interrupted", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const started = yield* Deferred.make<void>()
      const queue = yield* makeGroupCommitQueue({
        maxBatch: 1,
        // the first run never ends, so the next call stays queued
        run: (inputs: ReadonlyArray<number>) => Effect.andThen(Deferred.succeed(started, undefined), Effect.never).pipe(Effect.as(inputs))
      }).pipe(Scope.provide(scope))
      queue.offer(1, () => {})
      yield* Deferred.await(started)
      let second: Exit.Exit<number, unknown> | undefined
      queue.offer(2, (exit) => void (second = exit))
      yield* Scope.close(scope, Exit.void)
      assert.isDefined(second)
      assert.isTrue(Exit.isFailure(second!) && Exit.hasInterrupts(second!))
    }))
})
