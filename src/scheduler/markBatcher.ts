// Group commit of the shards' mark advances (store/shardMarks.ts): the shard actors that come due
// in the same moment (a burst spread over 64 shards, or one trigger every few milliseconds at a
// steady rate) move their marks in one small statement instead of one each. Each actor gets back
// whether its shard is still its node's (a shard taken over meanwhile is not advanced).
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { NodeIdentity } from "../cluster/node.ts"
import { makeGroupCommit } from "../lib/groupCommit.ts"
import { shardMarksAdvance } from "../store/shardMarks.ts"
import { isDatabaseUnavailable } from "../store/unavailable.ts"

interface Advance {
  readonly shard: number
  readonly untilMs: number
}

/** Advances per statement; two rounds in flight so one slow commit does not hold the next moment's. */
const MAX_PER_ROUND = 64
const ROUNDS_IN_FLIGHT = 2

export class MarkBatcher extends Context.Service<MarkBatcher, {
  /** Moves the shard's mark to `untilMs` (never back); false when the shard is no longer this node's. */
  readonly advance: (shard: number, untilMs: number) => Effect.Effect<boolean, unknown>
}>()("timewheel/MarkBatcher") {
  static readonly layer = Layer.effect(MarkBatcher, Effect.gen(function*() {
    const node = (yield* NodeIdentity).id
    const advance = yield* makeGroupCommit({
      maxBatch: MAX_PER_ROUND,
      rounds: ROUNDS_IN_FLIGHT,
      name: "mark batcher",
      failsWholeGroup: isDatabaseUnavailable,
      run: (advances: ReadonlyArray<Advance>) =>
        Effect.map(shardMarksAdvance({ node, marks: advances }), (moved) => advances.map((a) => moved.has(a.shard)))
    })
    return MarkBatcher.of({ advance: (shard, untilMs) => advance({ shard, untilMs }) })
  }))
}
