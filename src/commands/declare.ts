// POST /declare as one command (docs/declare-and-bulk.md "What the call does"): every item validated
// before anything is written, the triggers carrying the tag read (an unchanged item found by the digest
// stored with its trigger, domain/itemDigest.ts, without reading the compared fields), the diff planned (domain/declare.ts),
// then applied in steps of at most STEP_ITEMS item writes, each its own short transaction (the call is
// not atomic: a failure leaves the steps applied and resending completes it), then the cancellations, a
// statement per CANCEL_STEP. Shards are woken after each commit; the materializer re-creates the
// upcoming instances this call cancelled (within its 5 s period). A trigger claimed between the read
// and a write is left alone: its update becomes a new trigger (its key is no longer pending), its
// cancellation does not happen and has no entry. Never quota.
import * as Effect from "effect/Effect"
import { Wakeups } from "../cluster/wakeups.ts"
import { SchedulerTiming } from "../config.ts"
import { planDeclare } from "../domain/declare.ts"
import { scheduledAtHint } from "../domain/scheduledAtHints.ts"
import { BadRequest } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { type DeclareBody, type Item, validateDeclareBody } from "../domain/item.ts"
import { digestKeyOf, itemDigest } from "../domain/itemDigest.ts"
import { type OperationEntry, summarize, type StoredTrigger, type Summary } from "../domain/itemMatch.ts"
import { ShardCount } from "../store/db.ts"
import { itemDigestsOfKeys, itemDigestsReadForDeclare, itemsReadForDeclare } from "../store/itemReads.ts"
import { itemTriggersCancel } from "../store/itemWrites.ts"
import { isUniqueViolation } from "../store/projects.ts"
import type { Keyring } from "../domain/sealing.ts"
import { EncryptionKeys } from "../store/sealedRequests.ts"
import { withTransaction } from "../store/transaction.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { Metrics } from "../metrics/metrics.ts"
import { applyItemWrites, cancelRows, cancelWakeups, countCreated } from "./itemWrites.ts"

export interface DeclareResult {
  readonly tag: string
  readonly summary: Summary
  readonly operations: ReadonlyArray<OperationEntry>
}

/** Item writes per transaction: each holds the rows it changes only for a few milliseconds. */
export const STEP_ITEMS = 1_000
/** Cancellations per statement. */
const CANCEL_STEP = 5_000
/** A key taken meanwhile by a concurrent call (a unique index) starts the call over, this often. */
const ATTEMPTS = 3

const slices = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

type Valid = Extract<ReturnType<typeof validateDeclareBody>, { readonly _tag: "Ok" }>

/**
 * Each item's digest (domain/itemDigest.ts), keyed when ENCRYPTION_KEYS is set: in the items' order,
 * for the triggers written, and by key (keyless and empty-key items match nothing), for the read.
 */
const itemDigests = (items: ReadonlyArray<Item>, keyring: Keyring | null) => {
  const key = digestKeyOf(keyring)
  const inOrder = new Array<string>(items.length)
  const byKey = new Map<string, string>()
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    const digest = itemDigest(item, key)
    inOrder[i] = digest
    const customKey = item.definition.customKey
    if (customKey !== null && customKey !== "") byKey.set(customKey, digest)
  }
  return { inOrder, byKey }
}

/** Keys whose stored digests are looked at first: a call's items are most likely all unchanged, or all changed. */
const SAMPLE_KEYS = 32

/** Up to SAMPLE_KEYS keys spread over the items. */
const sampleKeys = (keys: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (keys.length <= SAMPLE_KEYS) return keys
  const step = keys.length / SAMPLE_KEYS
  return Array.from({ length: SAMPLE_KEYS }, (_, i) => keys[Math.floor(i * step)]!)
}

/**
 * The triggers the plan diffs the items against. When the stored digests of a sample of the items'
 * keys show most of those unchanged: read without their compared fields, with their stored digests,
 * and those an item's key names whose digest is not that item's (changed, or stored without one) read
 * again in full — all of them in one read of the tag when they are most. Otherwise (most changed, or
 * nothing stored yet) read in full at once. Either way the same triggers, only read differently.
 */
const triggersToDiff = (projectId: string, tag: string, digests: ReturnType<typeof itemDigests>) =>
  Effect.gen(function*() {
    const sample = yield* itemDigestsOfKeys({ projectId, tag, keys: sampleKeys([...digests.byKey.keys()]) })
    const same = sample.filter((row) => row.item_digest !== null && row.item_digest === digests.byKey.get(row.custom_key)).length
    if (same * 2 <= sample.length || sample.length === 0) return yield* itemsReadForDeclare({ projectId, tag })
    const triggers = yield* itemDigestsReadForDeclare({ projectId, tag, itemDigestOf: (key) => digests.byKey.get(key) })
    const unsure = new Set<string>()
    for (const t of triggers) {
      if (!t.sameAsItem && t.generatorId === null && t.definition.customKey !== null && digests.byKey.has(t.definition.customKey)) {
        unsure.add(t.id)
      }
    }
    if (unsure.size === 0) return triggers
    if (unsure.size * 2 > triggers.length) return yield* itemsReadForDeclare({ projectId, tag })
    // a trigger no longer read (it left the pending statuses meanwhile) is dropped, as if read now
    const full = new Map((yield* itemsReadForDeclare({ projectId, tag, ids: [...unsure] })).map((t) => [t.id, t]))
    return triggers.flatMap((t) => (unsure.has(t.id) ? (full.has(t.id) ? [full.get(t.id)!] : []) : [t]))
  })

const declareOnce = (projectId: string, call: Valid, nowMs: number, digests: ReturnType<typeof itemDigests>) =>
  Effect.gen(function*() {
    const shards = (yield* ShardCount).count
    const wakeups = yield* Wakeups
    const wakeHorizonMs = nowMs + 2 * (yield* SchedulerTiming).lookaheadMs
    const triggers = yield* triggersToDiff(projectId, call.tag, digests)
    const newId = () => uuidv7(nowMs)
    const plan = planDeclare({
      tag: call.tag, items: call.items, runMissed: call.runMissed, nowMs, triggers, newId, digests: digests.inOrder
    })
    // what the writes compare-and-set against (nothing to write: nothing to index)
    const anyWrite = plan.itemWrites.length + plan.cancelIds.length > 0
    const stored = new Map<string, StoredTrigger>(anyWrite ? triggers.map((t) => [t.id, t]) : [])

    const changed = new Map<string, OperationEntry>()
    for (const writes of slices(plan.itemWrites, STEP_ITEMS)) {
      const applied = yield* withTransaction(applyItemWrites({
        projectId, keyScope: call.tag, shards, nowMs, wakeHorizonMs, stored, cancelIds: [], writes, strict: false, newId
      }))
      for (const [id, entry] of applied.changedEntries) changed.set(id, entry)
      yield* wakeups.wake(applied.wake)
    }

    const missed = new Set<string>()
    for (const ids of slices(plan.cancelIds, CANCEL_STEP)) {
      const cancelled = yield* itemTriggersCancel({ projectId, rows: cancelRows(ids, stored), nowMs })
      const done = new Set(cancelled.map((row) => row.id))
      for (const id of ids) if (!done.has(id)) missed.add(id)
      yield* wakeups.wake(cancelWakeups(cancelled, stored, wakeHorizonMs))
    }

    // as planned unless a write missed (the common case: no entry to replace or drop)
    const asPlanned = changed.size === 0 && missed.size === 0
    const operations = asPlanned ? plan.operations : plan.operations.flatMap((entry) =>
      entry.operation === "cancelled" ? (missed.has(entry.id) ? [] : [entry]) : [changed.get(entry.id) ?? entry]
    )
    countCreated(yield* Metrics, "declare", operations)
    return { tag: call.tag, summary: asPlanned ? plan.summary : summarize(operations), operations } satisfies DeclareResult
  })

/** The use case; a 400 before anything is written; a database that cannot be reached is ServiceUnavailable. */
export const declareTriggers = (projectId: string, body: DeclareBody, nowMs: number) =>
  orUnavailable(Effect.gen(function*() {
    const call = validateDeclareBody(body, nowMs)
    if (call._tag === "Invalid") return yield* Effect.fail(new BadRequest(call.message, scheduledAtHint(call.message)))
    const digests = itemDigests(call.items, yield* EncryptionKeys)
    const attempt = (n: number): ReturnType<typeof declareOnce> =>
      declareOnce(projectId, call, nowMs, digests).pipe(
        Effect.catchIf((error) => n < ATTEMPTS && isUniqueViolation(error), () => attempt(n + 1))
      )
    return yield* attempt(1)
  }))
