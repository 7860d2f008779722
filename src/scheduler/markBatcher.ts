// Group commit of the shards' fires: the shard actors that fire in the same moment (every shard of
// the node fires on the same grid of instants: shardActor.ts) move their marks in one small statement
// (store/shardMarks.ts) and, once it is committed, read the first page of what each move covers in
// one more (store/firedTriggers.ts triggersFetchFiredMany), instead of two statements per shard.
// Each actor gets back whether its shard is still its node's (a shard taken over meanwhile is not
// advanced, and nothing is read for it), and its page.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { NodeIdentity } from "../cluster/node.ts"
import { makeGroupCommit } from "../lib/groupCommit.ts"
import { type FiredRow, triggersFetchFiredMany } from "../store/firedTriggers.ts"
import { shardMarksAdvance } from "../store/shardMarks.ts"
import { isDatabaseUnavailable } from "../store/unavailable.ts"

interface Advance {
  readonly shard: number
  readonly untilMs: number
  /** Read the first page of (afterMs, untilMs] once the mark moved (`fire`). */
  readonly fetch?: { readonly afterMs: number; readonly limit: number }
}

/** What an advance came to: false when the shard is no longer this node's; the page a fire read. */
type Advanced = { readonly moved: false } | { readonly moved: true; readonly page: ReadonlyArray<FiredRow> }

/** Advances per statement (every shard of a node at once); two rounds in flight so one slow commit does not hold the next moment's. */
const MAX_PER_ROUND = 256
const ROUNDS_IN_FLIGHT = 2

export class MarkBatcher extends Context.Service<MarkBatcher, {
  /** Moves the shard's mark to `untilMs` (never back); false when the shard is no longer this node's. */
  readonly advance: (shard: number, untilMs: number) => Effect.Effect<boolean, unknown>
  /**
   * Moves the shard's mark from `afterMs` to `untilMs` and reads the first `limit` pending triggers
   * due in (afterMs, untilMs], in (due_at, id) order; null when the shard is no longer this node's.
   */
  readonly fire: (input: {
    readonly shard: number
    readonly afterMs: number
    readonly untilMs: number
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<FiredRow> | null, unknown>
}>()("timewheel/MarkBatcher") {
  static readonly layer = Layer.effect(MarkBatcher, Effect.gen(function*() {
    const node = (yield* NodeIdentity).id
    const advance = yield* makeGroupCommit({
      maxBatch: MAX_PER_ROUND,
      rounds: ROUNDS_IN_FLIGHT,
      name: "mark batcher",
      failsWholeGroup: isDatabaseUnavailable,
      run: (advances: ReadonlyArray<Advance>) =>
        Effect.gen(function*() {
          const moved = yield* shardMarksAdvance({ node, marks: advances })
          const fetches = advances.flatMap((a) =>
            a.fetch !== undefined && moved.has(a.shard) ? [{ shard: a.shard, afterMs: a.fetch.afterMs, untilMs: a.untilMs, limit: a.fetch.limit }] : []
          )
          const pages = yield* triggersFetchFiredMany({ fetches, nowMs: yield* Clock.currentTimeMillis })
          return advances.map((a): Advanced => moved.has(a.shard) ? { moved: true, page: pages.get(a.shard) ?? [] } : { moved: false })
        })
    })
    return MarkBatcher.of({
      advance: (shard, untilMs) => Effect.map(advance({ shard, untilMs }), (a) => a.moved),
      fire: ({ shard, afterMs, untilMs, limit }) =>
        Effect.map(advance({ shard, untilMs, fetch: { afterMs, limit } }), (a) => a.moved ? a.page : null)
    })
  }))
}
