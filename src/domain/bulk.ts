// POST /bulk as pure functions (docs/declare-and-bulk.md "POST /bulk"): the body's shape,
// its validation, what the store must read, and the plan — cancels resolved against the state
// before the call and applied first, then upserts matched by key across the project (no tag added,
// a generator edit keeps its upcoming instance). All-or-nothing: the store applies it in one go.
import { isUuid } from "./ids.ts"
import {
  BULK_WORDING,
  decodeItemList,
  decodeList,
  decodeObject,
  decodeWith,
  hasField,
  isPlainObject,
  mismatch,
  requiredField,
  STRING,
  unstorableText,
  validateItems
} from "./item.ts"
import type { Decoded, Invalid, Item, ItemInput } from "./item.ts"
import {
  cancelledEntry, distinctById, indexPendingByKey, instancesByGenerator, isPending, keyOf, matchFor, planItem, summarize
} from "./itemMatch.ts"
import type { ItemWrite, MatchContext, OperationEntry, StoredTrigger, Summary } from "./itemMatch.ts"

/** A cancels entry: a bare string is an id; an object names exactly one of id, customKey, tag. */
export type CancelTarget =
  | { readonly _tag: "Id"; readonly id: string }
  | { readonly _tag: "CustomKey"; readonly customKey: string }
  | { readonly _tag: "Tag"; readonly tag: string }

export interface BulkBody {
  readonly upserts: ReadonlyArray<ItemInput>
  readonly cancels: ReadonlyArray<CancelTarget>
}

const CANCEL_FIELDS = ["id", "customKey", "tag"] as const
const CANCEL_SHAPE = "must be a trigger id, or an object with exactly one of id, customKey, tag"

/** Malformed: not a string or object, none or several of id/customKey/tag, a non-string value. */
const decodeCancel = (json: unknown): CancelTarget => {
  if (typeof json === "string") return { _tag: "Id", id: json }
  if (!isPlainObject(json)) return mismatch(CANCEL_SHAPE)
  const named = CANCEL_FIELDS.filter((field) => hasField(json, field))
  if (named.length !== 1) return mismatch(CANCEL_SHAPE)
  const value = requiredField(json, named[0]!, STRING)
  switch (named[0]!) {
    case "id":
      return { _tag: "Id", id: value }
    case "customKey":
      return { _tag: "CustomKey", customKey: value }
    case "tag":
      return { _tag: "Tag", tag: value }
  }
}

/** `{upserts?, cancels?}`: both optional (`{}` is valid), lists when present; unknown fields ignored. */
export const decodeBulkBody = (json: unknown): Decoded<BulkBody> =>
  decodeWith(() => {
    const o = decodeObject(json)
    return {
      upserts: hasField(o, "upserts") ? decodeItemList("upserts", o.upserts) : [],
      cancels: hasField(o, "cancels") ? decodeList("cancels", o.cancels, decodeCancel) : []
    }
  })

const targetText = (target: CancelTarget): readonly [field: string, text: string] => {
  switch (target._tag) {
    case "Id":
      return ["id", target.id]
    case "CustomKey":
      return ["customKey", target.customKey]
    case "Tag":
      return ["tag", target.tag]
  }
}

/**
 * The upserts as /declare's items (`Duplicate customKey in upserts: <key>`, `Upsert <key>: …`),
 * then the cancel targets, which are query values: `cancels[<i>].<field> must not contain …`.
 */
export const validateBulkBody = (
  body: BulkBody,
  nowMs: number
): { readonly _tag: "Ok"; readonly upserts: ReadonlyArray<Item>; readonly cancels: ReadonlyArray<CancelTarget> } | Invalid => {
  const upserts = validateItems(body.upserts, nowMs, BULK_WORDING)
  if (upserts._tag === "Invalid") return upserts
  for (const [i, target] of body.cancels.entries()) {
    const [field, text] = targetText(target)
    const problem = unstorableText(`cancels[${i}].${field}`, text)
    if (problem !== undefined) return { _tag: "Invalid", message: problem }
  }
  return { _tag: "Ok", upserts: upserts.items, cancels: body.cancels }
}

export interface BulkLookups {
  /** Cancel ids that can name a trigger (UUIDs); any other id matches nothing. */
  readonly ids: ReadonlyArray<string>
  /** Keys of the upserts and of the cancels. */
  readonly customKeys: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
}

/**
 * What the store reads for planBulk's `triggers`: every trigger whose id is in `ids` (any status);
 * every pending one-shot (registered, skipped, retrying) and active generator whose key is in
 * `customKeys`; every trigger carrying one of `tags` that is registered, skipped, retrying, queued
 * or active; and the registered (upcoming) instance of every active generator among those.
 */
export const bulkLookups = (upserts: ReadonlyArray<Item>, cancels: ReadonlyArray<CancelTarget>): BulkLookups => {
  const distinct = (values: ReadonlyArray<string>) => [...new Set(values)]
  return {
    ids: distinct(cancels.flatMap((t) => (t._tag === "Id" && isUuid(t.id) ? [t.id] : []))),
    customKeys: distinct([
      ...upserts.flatMap((item) => (item.definition.customKey === null ? [] : [item.definition.customKey])),
      ...cancels.flatMap((t) => (t._tag === "CustomKey" && t.customKey !== "" ? [t.customKey] : []))
    ]),
    tags: distinct(cancels.flatMap((t) => (t._tag === "Tag" ? [t.tag] : [])))
  }
}

export interface BulkInput {
  readonly upserts: ReadonlyArray<Item>
  readonly cancels: ReadonlyArray<CancelTarget>
  readonly nowMs: number
  /** As bulkLookups describes (duplicates allowed, oldest first). */
  readonly triggers: ReadonlyArray<StoredTrigger>
  readonly newId: () => string
}

export interface BulkPlan {
  readonly operations: ReadonlyArray<OperationEntry>
  readonly summary: Summary
  /** Applied first: every trigger the cancels cancel (a cancelled generator's upcoming instance included). */
  readonly cancelIds: ReadonlyArray<string>
  /** Then, in request order, one per upsert that writes. */
  readonly itemWrites: ReadonlyArray<ItemWrite>
}

/** The triggers read for the call, indexed for the cancel targets. */
interface Lookup {
  readonly triggers: ReadonlyArray<StoredTrigger>
  readonly byId: ReadonlyMap<string, StoredTrigger>
  /** Pending keyed one-shots and active generators by key (instances have no key). */
  readonly pendingByKey: ReadonlyMap<string, ReadonlyArray<StoredTrigger>>
}

/**
 * What one target cancels (docs/declare-and-bulk.md "POST /bulk", as DELETE /cancel): by id a pending
 * one-shot (an instance included) or an active generator; by key the active generator owning it,
 * otherwise the pending one-shot; by tag every pending trigger carrying it plus the generators' queued
 * instances carrying it. Anything else (queued one-shots, running, completed, cancelled) is skipped
 * silently.
 */
const targetedBy = (target: CancelTarget, lookup: Lookup): ReadonlyArray<StoredTrigger> => {
  switch (target._tag) {
    case "Id": {
      const trigger = lookup.byId.get(target.id)
      return trigger !== undefined && isPending(trigger) ? [trigger] : []
    }
    case "CustomKey": {
      const owners = lookup.pendingByKey.get(target.customKey) ?? []
      const owner = owners.find((t) => t.kind === "generator") ?? owners[0]
      return owner === undefined ? [] : [owner]
    }
    case "Tag":
      return lookup.triggers.filter(
        (t) => t.definition.tags.includes(target.tag) && (isPending(t) || (t.generatorId !== null && t.status === "queued"))
      )
  }
}

type Instances = ReadonlyMap<string, ReadonlyArray<StoredTrigger>>

/** A generator's upcoming instance: cancelled with it (/cancel rule 2) or when it is replaced. */
const upcomingInstances = (instances: Instances, generator: StoredTrigger): ReadonlyArray<StoredTrigger> =>
  generator.kind === "generator" ? (instances.get(generator.id) ?? []).filter((t) => t.status === "registered") : []

/** Every trigger the cancels cancel, each once, in target order; a generator's upcoming instance after it. */
const resolveCancels = (
  cancels: ReadonlyArray<CancelTarget>,
  lookup: Lookup,
  instances: Instances
): ReadonlyArray<StoredTrigger> =>
  distinctById(
    cancels.flatMap((target) => targetedBy(target, lookup)).flatMap((t) => [t, ...upcomingInstances(instances, t)])
  )

/** Cancelled entries: one-shots and instances first, then generators (as /declare orders them). */
const cancelledEntries = (cancelled: ReadonlyArray<StoredTrigger>): ReadonlyArray<OperationEntry> => [
  ...cancelled.filter((t) => t.kind === "job").map(cancelledEntry),
  ...cancelled.filter((t) => t.kind === "generator").map(cancelledEntry)
]

/**
 * The plan. Cancels are resolved against the triggers as they were before the call and applied
 * first; upserts then match among the pending triggers the cancels left (a cancelled trigger's key
 * is free again, so its upsert is `added`). Replacing a generator by a one-shot also cancels its
 * upcoming instance, with an entry; runMissed does not exist in /bulk (past absolute one-shots are
 * skipped).
 */
export const planBulk = (input: BulkInput): BulkPlan => {
  const triggers = distinctById(input.triggers)
  const instances = instancesByGenerator(triggers)
  const lookup: Lookup = { triggers, byId: new Map(triggers.map((t) => [t.id, t])), pendingByKey: indexPendingByKey(triggers) }
  const cancelledByTargets = resolveCancels(input.cancels, lookup, instances)
  const cancelledIds = new Set(cancelledByTargets.map((t) => t.id))
  const index = indexPendingByKey(triggers.filter((t) => !cancelledIds.has(t.id)))
  const context: MatchContext = { nowMs: input.nowMs, runMissed: false, newId: input.newId }

  const itemEntries: Array<OperationEntry> = []
  const itemWrites: Array<ItemWrite> = []
  const cancelledByUpserts: Array<StoredTrigger> = []
  for (const item of input.upserts) {
    const match = matchFor(index, item)
    const upcoming = match === undefined ? [] : upcomingInstances(instances, match).filter((t) => !cancelledIds.has(t.id))
    const outcome = planItem(item, match, context, upcoming.map((t) => t.id))
    itemEntries.push(outcome.entry)
    if (outcome.write === null) continue
    itemWrites.push(outcome.write)
    if (outcome.write._tag === "Replace") cancelledByUpserts.push(...upcoming)
  }

  const operations = [...itemEntries, ...cancelledEntries([...cancelledByTargets, ...cancelledByUpserts])]
  return { operations, summary: summarize(operations), cancelIds: [...cancelledIds], itemWrites }
}
