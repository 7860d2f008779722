// POST /bulk as one command (docs/declare-and-bulk.md "POST /bulk"): the upserts and
// cancels validated (every 400 first), the triggers they name read, the plan made (domain/bulk.ts),
// then applied all-or-nothing in one transaction of three statements: the cancels (and the
// triggers replaced), the updates in place, the inserts (a call that only inserts is one statement). The read takes no lock, so the
// transaction holds rows only while its statements run: its updates and cancels are
// compare-and-sets on the statuses read, and when one misses (the scheduler claimed a trigger, or
// another request changed it) the transaction is rolled back and the call planned again from the
// new state, as it is when a concurrent call took a custom key first. Shards are woken after the
// commit. Never quota. A call that only adds (no cancels, no key naming a pending trigger) skips the
// general plan: bulkInserts.ts writes its items and its answer text directly. The answer is JSON
// text either way.
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { Wakeups } from "../cluster/wakeups.ts"
import { SchedulerTiming } from "../config.ts"
import { type BulkBody, bulkLookups, decodeBulkBody, planBulk, validateBulkBody } from "../domain/bulk.ts"
import { scheduledAtHint } from "../domain/scheduledAtHints.ts"
import { BadRequest, Conflict } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import type { Invalid, Item } from "../domain/item.ts"
import type { Keyring } from "../domain/sealing.ts"
import type { OperationEntry, StoredTrigger, Summary } from "../domain/itemMatch.ts"
import { ShardCount } from "../store/db.ts"
import { TriggerColumns } from "../store/itemWrites.ts"
import { EncryptionKeys } from "../store/sealedRequests.ts"
import { itemsReadForBulk } from "../store/itemReads.ts"
import { isUniqueViolation } from "../store/projects.ts"
import { withTransaction } from "../store/transaction.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { Metrics } from "../metrics/metrics.ts"
import { applyInserts, countInserted, insertsAnswer, planInserts } from "./bulkInserts.ts"
import { applyItemWrites, countCreated } from "./itemWrites.ts"

export interface BulkResult {
  readonly summary: Summary
  readonly operations: ReadonlyArray<OperationEntry>
}

/** A trigger changed between the read and the write: the transaction is rolled back, the call planned again. */
class StalePlan extends Data.TaggedError("StalePlan")<{}> {}

/** Plans made before giving up with a 409 (each after a rollback that wrote nothing). */
const ATTEMPTS = 5

type Valid = Extract<ReturnType<typeof validateBulkBody>, { readonly _tag: "Ok" }>

/**
 * One /bulk call's body, the one place it is held: validated (`check`), then handed to one attempt at
 * a time. An attempt reads it (`current`) and takes it (`take`): a call that only adds takes its items
 * before its insert, so that once they are in the insert's columns nothing refers to them while the
 * statement runs. A call planned again (a trigger changed, a key taken meanwhile) gets it decoded and
 * validated anew (`again`: from the request's text for the HTTP route), the same items for the same
 * body and moment; between attempts only what `again` holds stays alive.
 */
export class BulkCall {
  readonly nowMs: number
  private readonly again: () => BulkBody
  private body: BulkBody | undefined
  private valid: Valid | undefined

  private constructor(body: BulkBody, again: () => BulkBody, nowMs: number) {
    this.body = body
    this.again = again
    this.nowMs = nowMs
  }

  /** The route's call: the body decoded from `text`, decoded again from it when planned again. */
  static ofText(body: BulkBody, text: string, nowMs: number): BulkCall {
    return new BulkCall(body, () => decodedAgain(text), nowMs)
  }

  /** A call whose decoded body stays alive anyway (the MCP tool's arguments): the same value each time. */
  static ofValue(body: BulkBody, nowMs: number): BulkCall {
    return new BulkCall(body, () => body, nowMs)
  }

  /** The first validation: the first per-item problem (the call's 400), or undefined with the call held. */
  check(): Invalid | undefined {
    const validated = validateBulkBody(this.body ?? this.again(), this.nowMs)
    this.body = undefined
    if (validated._tag === "Invalid") return validated
    this.valid = validated
    return undefined
  }

  /** This attempt's call: the one held, else validated again (it was valid once: it is again). */
  get current(): Valid {
    if (this.valid === undefined) {
      const validated = validateBulkBody(this.again(), this.nowMs)
      if (validated._tag === "Invalid") throw new Error(`a /bulk call valid once failed again: ${validated.message}`)
      this.valid = validated
    }
    return this.valid
  }

  /** This attempt's call, no longer held: the next attempt validates it again. */
  take(): Valid {
    const call = this.current
    this.valid = undefined
    return call
  }
}

/** A body decoded once already decodes the same again. */
const decodedAgain = (text: string): BulkBody => {
  const decoded = decodeBulkBody(JSON.parse(text))
  if (decoded._tag === "Shape") throw new Error(`a /bulk body decoded once failed again: ${decoded.reason}`)
  return decoded.value
}

interface Context {
  readonly shards: number
  readonly nowMs: number
  readonly wakeHorizonMs: number
  readonly newId: () => string
}

/** A call that only adds: its items into the columns (then let go of), the insert, the wake-ups; the answer written last. */
const insertOnly = (projectId: string, items: ReadonlyArray<Item>, keyring: Keyring | null, context: Context) => {
  const plan = planInserts({ items, ...context }, new TriggerColumns(keyring, items.length))
  return Effect.gen(function*() {
    const inserted = yield* applyInserts(projectId, context.nowMs, plan)
    yield* (yield* Wakeups).wake(inserted.wake)
    countInserted(yield* Metrics, inserted)
    return insertsAnswer(inserted)
  })
}

const bulkOnce = (projectId: string, call: BulkCall) =>
  Effect.gen(function*() {
    const nowMs = call.nowMs
    const shards = (yield* ShardCount).count
    const wakeHorizonMs = nowMs + 2 * (yield* SchedulerTiming).lookaheadMs
    const keyring = yield* EncryptionKeys
    const triggers = yield* itemsReadForBulk({ projectId, ...bulkLookups(call.current.upserts, call.current.cancels) })
    const newId = () => uuidv7(nowMs)
    if (call.current.cancels.length === 0 && triggers.length === 0) {
      // every upsert is new: one insert, atomic by itself (a key taken meanwhile fails it whole)
      return yield* insertOnly(projectId, call.take().upserts, keyring, { shards, nowMs, wakeHorizonMs, newId })
    }
    const { upserts, cancels } = call.take()
    const plan = planBulk({ upserts, cancels, nowMs, triggers, newId })
    const stored = new Map<string, StoredTrigger>(triggers.map((t) => [t.id, t]))
    const apply = Effect.gen(function*() {
      const applied = yield* applyItemWrites({
        projectId, keyScope: null, shards, nowMs, wakeHorizonMs, stored, cancelIds: plan.cancelIds, writes: plan.itemWrites,
        strict: true, newId
      })
      if (applied.missedCancels.size > 0 || applied.missedUpdates.length > 0) return yield* Effect.fail(new StalePlan())
      return applied
    })
    // only inserts: one statement, atomic by itself (it cannot miss); else one transaction
    const insertsOnly = plan.cancelIds.length === 0 && plan.itemWrites.every((write) => write._tag === "Insert")
    const applied = yield* (insertsOnly ? apply : withTransaction(apply))
    yield* (yield* Wakeups).wake(applied.wake)
    countCreated(yield* Metrics, "bulk", plan.operations)
    return JSON.stringify({ summary: plan.summary, operations: plan.operations } satisfies BulkResult)
  })

/**
 * The use case, answering the JSON text of a BulkResult; a 400 before anything is written; a database
 * that cannot be reached is ServiceUnavailable.
 */
export const bulkTriggers = (projectId: string, call: BulkCall) =>
  orUnavailable(Effect.gen(function*() {
    const invalid = call.check()
    if (invalid !== undefined) return yield* Effect.fail(new BadRequest(invalid.message, scheduledAtHint(invalid.message)))
    const attempt = (n: number): Effect.Effect<string, unknown, Effect.Services<ReturnType<typeof bulkOnce>>> =>
      bulkOnce(projectId, call).pipe(
        Effect.catchIf(
          (error) => error instanceof StalePlan || isUniqueViolation(error),
          () => n < ATTEMPTS
            ? attempt(n + 1)
            : Effect.fail(new Conflict("The triggers of this call kept changing while it was applied; nothing was written"))
        )
      )
    return yield* attempt(1)
  }))
