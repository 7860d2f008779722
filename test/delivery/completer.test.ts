// The completer (delivery/completer.ts): what an outcome becomes under the policy that applies, and
// how batches are recorded — retried until the database takes them, every completion let go once
// its batch is recorded (also when its trigger's state had changed), retries woken into their shard.
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Wakeups } from "../../src/cluster/wakeups.ts"
import type { ShardMessage } from "../../src/cluster/wakeups.ts"
import type { RetryPolicy } from "../../src/domain/retry.ts"
import type { DeliveryRow } from "../../src/domain/trigger.ts"
import { type Completion, completionOf, makeCompleter, type RecordBatch } from "../../src/delivery/completer.ts"
import type { DeliveryOutcome } from "../../src/delivery/executor.ts"

const FINISHED_MS = 1_800_000_000_000

const row = (attempt: number, overrides: Partial<DeliveryRow> = {}): DeliveryRow => ({
  id: `trigger-${attempt}`, shard: 3, generatorId: null, projectId: "project", url: "http://127.0.0.1:9/hook", method: "POST",
  headers: [], body: null, contentType: null, tags: [], attempt, retry: null, projectRetry: null, triggeredBy: null,
  signingSecrets: [], gateTags: [], scheduledAtMs: null, fired: null, traceparent: null, tracestate: null, ...overrides
})

const answered = (httpStatus: number, headers: Record<string, string> = {}): DeliveryOutcome => ({
  startedAtMs: FINISHED_MS - 40, finishedAtMs: FINISHED_MS, durationMs: 40, httpStatus, responseHeaders: headers, responseBody: "",
  errorKind: null, errorCode: null, errorMessage: null, connectTimeoutSeconds: 10, timeoutSeconds: 300
})

const refused: DeliveryOutcome = {
  ...answered(0), httpStatus: null, responseHeaders: null, responseBody: null,
  errorKind: "connection_refused", errorCode: "ECONNREFUSED", errorMessage: "connect ECONNREFUSED"
}

/** Fixed 10 s, three attempts, retried on 5xx and network errors; no jitter. */
const fixed: RetryPolicy = {
  strategy: "fixed", maxAttempts: 3, initialDelaySeconds: 10, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network"
}

describe("completionOf: an outcome under the policy that applies", () => {
  it.each([
    ["a 2xx: succeeded, nothing to retry", row(1, { retry: fixed }), [], answered(204), { succeeded: true, deadLetter: false, retryAtMs: null }],
    ["a 500 with attempts left: retried after the delay", row(1, { retry: fixed }), [], answered(500),
      { succeeded: false, deadLetter: false, retryAtMs: FINISHED_MS + 10_000 }],
    ["a 500 at the last attempt: a dead letter", row(3, { retry: fixed }), [], answered(500), { succeeded: false, deadLetter: true, retryAtMs: null }],
    ["a 404 where only 5xx and network errors are retried: a dead letter", row(1, { retry: fixed }), [], answered(404),
      { succeeded: false, deadLetter: true, retryAtMs: null }],
    ["no response (connection refused): retried", row(1, { retry: fixed }), [], refused,
      { succeeded: false, deadLetter: false, retryAtMs: FINISHED_MS + 10_000 }],
    ["a 503 whose Retry-After is later than the delay: retried at the Retry-After", row(1, { retry: fixed }), [],
      answered(503, { "retry-after": "60" }), { succeeded: false, deadLetter: false, retryAtMs: FINISHED_MS + 60_000 }],
    ["no policy of its own: its tags' policy applies", row(1), [{ ...fixed, initialDelaySeconds: 7 }], answered(500),
      { succeeded: false, deadLetter: false, retryAtMs: FINISHED_MS + 7_000 }]
  ] as const)("%s", (_, delivered, tagRetry, outcome, expected) => {
    const completion = completionOf(delivered, tagRetry, outcome, 0.5, "execution-id")
    assert.deepStrictEqual({
      succeeded: completion.execution.succeeded,
      deadLetter: completion.execution.isDeadLetter,
      retryAtMs: completion.outcome.retryAtMs
    }, expected)
    assert.strictEqual(completion.execution.attempt, delivered.attempt)
    assert.strictEqual(completion.execution.id, "execution-id")
    assert.strictEqual(completion.outcome.id, delivered.id)
  })

  it("a fired trigger's outcome carries the state it was fetched in (recorded only while it is unchanged)", () => {
    const completion = completionOf(row(1, { fired: { seenUs: "123" } }), [], answered(200), 0.5, "execution-id")
    assert.strictEqual(completion.outcome.firedSeenUs, "123")
  })
})

describe("the completer's batches", () => {
  const woken: Array<ShardMessage> = []
  const wakeups = Layer.succeed(Wakeups)({
    wake: (items) => Effect.sync(() => void woken.push(...items)),
    attach: () => Effect.void,
    detach: () => Effect.void
  })

  it.effect("a batch the database refuses twice is recorded at the third try, then let go; its retries are woken", () =>
    Effect.scoped(Effect.gen(function*() {
      woken.length = 0
      let tries = 0
      const recordedBatches: Array<ReadonlyArray<Completion>> = []
      const record: RecordBatch = (input) =>
        Effect.suspend(() => ++tries <= 2 ? Effect.fail(new Error("database away")) : Effect.succeed(input.executions.length))
      const completer = yield* makeCompleter({ node: "node-a", record, recorded: (batch) => void recordedBatches.push(batch) })
      completer.offer(completionOf(row(1, { retry: fixed }), [], answered(500), 0.5, "e1"))
      completer.offer(completionOf(row(2, { id: "other", retry: fixed }), [], answered(200), 0.5, "e2"))
      assert.strictEqual(completer.unrecorded(), 2)
      // the retries' backoff (100 ms, then 200 ms) on the test clock
      for (let i = 0; i < 10 && recordedBatches.length === 0; i++) yield* TestClock.adjust("100 millis")
      assert.strictEqual(tries, 3)
      assert.deepStrictEqual(recordedBatches.flat().map((c) => c.row.id), ["trigger-1", "other"])
      assert.strictEqual(completer.unrecorded(), 0)
      assert.deepStrictEqual(woken, [{ shard: 3, id: "trigger-1", dueAtMs: FINISHED_MS + 10_000 }])
    })).pipe(Effect.provide(wakeups)))

  it.effect("a few outcomes wait 20 ms and are recorded together; a gated one is recorded at once", () =>
    Effect.scoped(Effect.gen(function*() {
      const batches: Array<ReadonlyArray<string>> = []
      const completer = yield* makeCompleter({
        node: "node-a",
        record: (input) => Effect.sync(() => (batches.push(input.executions.map((x) => x.id)), input.executions.length)),
        recorded: () => {}
      })
      completer.offer(completionOf(row(1), [], answered(200), 0.5, "e1"))
      yield* TestClock.adjust("10 millis")
      assert.deepStrictEqual(batches, [], "not recorded alone right away")
      completer.offer(completionOf(row(2, { id: "second" }), [], answered(200), 0.5, "e2"))
      yield* TestClock.adjust("10 millis")
      assert.deepStrictEqual(batches, [["e1", "e2"]])
      assert.strictEqual(completer.unrecorded(), 0)
      completer.offer(completionOf(row(3, { id: "gated", gateTags: ["tag"] }), [], answered(200), 0.5, "e3"))
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(batches, [["e1", "e2"], ["e3"]])
    })).pipe(Effect.provide(wakeups)))

  it.effect("outcomes whose triggers changed meanwhile (recorded fewer) are let go all the same", () =>
    Effect.scoped(Effect.gen(function*() {
      const recordedIds: Array<string> = []
      const completer = yield* makeCompleter({
        node: "node-a",
        record: () => Effect.succeed(0),
        recorded: (batch) => void recordedIds.push(...batch.map((c) => c.row.id))
      })
      completer.offer(completionOf(row(1), [], answered(200), 0.5, "e1"))
      for (let i = 0; i < 10 && recordedIds.length === 0; i++) yield* TestClock.adjust("10 millis")
      assert.deepStrictEqual(recordedIds, ["trigger-1"])
      assert.strictEqual(completer.unrecorded(), 0)
    })).pipe(Effect.provide(wakeups)))
})
