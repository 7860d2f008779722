// Group commit of quota units (keyed and edit /schedule calls; plain creates take theirs with their
// row in InsertBatcher): per project and month, one statement takes as many units as a batch of calls
// asks for, and each call gets its own result. A database that cannot be reached fails the batch at
// once (no bisection: see lib/groupCommit.ts).
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { monthOf, type QuotaResult, quotaTake, splitGrant } from "../store/quota.ts"
import { makeGroupCommit } from "../lib/groupCommit.ts"
import { isDatabaseUnavailable } from "../store/unavailable.ts"

interface Call {
  readonly projectId: string
  readonly month: string
}

const MAX_BATCH = 2_000

export class QuotaBatcher extends Context.Service<QuotaBatcher, {
  readonly consume: (projectId: string, nowMs: number) => Effect.Effect<QuotaResult, unknown>
}>()("timewheel/QuotaBatcher") {
  static readonly layer = Layer.effect(QuotaBatcher, Effect.gen(function*() {
    const consume = yield* makeGroupCommit({
      maxBatch: MAX_BATCH,
      name: "quota batcher",
      groupOf: (call: Call) => `${call.projectId} ${call.month}`,
      failsWholeGroup: isDatabaseUnavailable,
      run: (calls) =>
        Effect.map(
          quotaTake({ projectId: calls[0]!.projectId, month: calls[0]!.month, units: calls.length }),
          (grant) => splitGrant(grant, calls.length)
        )
    })
    return QuotaBatcher.of({ consume: (projectId, nowMs) => consume({ projectId, month: monthOf(nowMs) }) })
  }))
}
