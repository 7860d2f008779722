// One item against the pending trigger its customKey matched (docs/declare-and-bulk.md "What the
// call does": its table and rules), shared by /declare and /bulk: the fields that differ, the operation
// entry, and the write it needs (insert, in-place update, or replace by a new trigger). Pure.
import { itemKind } from "./item.ts"
import type { Item, ItemSchedule } from "./item.ts"
import type { RetryPolicy } from "./retry.ts"
import { isPast } from "./scheduledAt.ts"
import type { HeaderPairs, TriggerDefinition, TriggerKind, TriggerStatus } from "./trigger.ts"

export type Kind = TriggerKind

/** A trigger as the store reads it for /declare and /bulk. */
export interface StoredTrigger {
  readonly id: string
  readonly kind: Kind
  readonly status: TriggerStatus
  /** Set on generator instances. */
  readonly generatorId: string | null
  readonly definition: TriggerDefinition
  /** One-shots and instances: the resolved time; generators: null. */
  readonly scheduledAtMs: number | null
  /** Generators only. */
  readonly cron: { readonly cronExpr: string; readonly cronTz: string } | null
  /**
   * The tag of the /declare call that created it, which scopes its custom key (rule 9); null (or
   * absent) when /schedule or /bulk created it.
   */
  readonly keyScope?: string | null
  /**
   * False when its compared fields were not read (/declare, store/itemReads.ts
   * itemDigestsReadForDeclare): its definition holds only its tags and custom key. Such a trigger
   * is compared with an item only through `sameAsItem`.
   */
  readonly comparedFields?: false
  /** Its digest equals the digest of the item with its key: an item of its kind matched to it is unchanged. */
  readonly sameAsItem?: boolean
}

/** A trigger to write: status `registered`/`skipped` for one-shots, `active` for generators. */
export interface PlannedTrigger {
  readonly id: string
  readonly kind: Kind
  readonly status: "registered" | "skipped" | "active"
  readonly definition: TriggerDefinition
  readonly schedule: ItemSchedule
  /** /declare: the digest of its compared fields, stored with it (domain/itemDigest.ts); else null. */
  readonly digest?: string | null
}

/** What one item writes; an unchanged item writes nothing. */
export type ItemWrite =
  | { readonly _tag: "Insert"; readonly trigger: PlannedTrigger }
  /** Same id, new definition, time or cron, and status. */
  | { readonly _tag: "Update"; readonly trigger: PlannedTrigger }
  /** `cancelIds` move to cancelled (no entry of their own), then `trigger` is inserted. */
  | { readonly _tag: "Replace"; readonly cancelIds: ReadonlyArray<string>; readonly trigger: PlannedTrigger }

export type OperationName = "added" | "skipped" | "unchanged" | "updated" | "cancelled"

export interface OperationEntry {
  readonly operation: OperationName
  readonly customKey: string | null
  readonly kind: Kind
  readonly id: string
  readonly changedFields?: ReadonlyArray<string>
}

export interface Summary {
  readonly unchanged: number
  readonly added: number
  readonly skipped: number
  readonly updated: number
  readonly cancelled: number
}

export const summarize = (operations: ReadonlyArray<OperationEntry>): Summary => {
  const summary = { unchanged: 0, added: 0, skipped: 0, updated: 0, cancelled: 0 }
  for (const entry of operations) summary[entry.operation]++
  return summary
}

export const cancelledEntry = (trigger: StoredTrigger): OperationEntry => ({
  operation: "cancelled",
  customKey: keyOf(trigger),
  kind: trigger.kind,
  id: trigger.id
})

/**
 * Held back by a tag gate: queued and claimed by no node. The store reads (and cancels) a queued
 * trigger only while no node has claimed it: a claimed one is about to be sent, left alone like a
 * running one.
 */
export const HELD_BACK_STATUSES = ["queued"] as const satisfies ReadonlyArray<TriggerStatus>

/** Pending (docs/declare-and-bulk.md): a one-shot registered, skipped or retrying; a generator active. */
export const isPending = (trigger: StoredTrigger): boolean =>
  trigger.kind === "generator"
    ? trigger.status === "active"
    : trigger.status === "registered" || trigger.status === "skipped" || trigger.status === "retrying"

// ---------------------------------------------------------------------------------------------
// Comparison (rule 1: time or cron expression and zone, url, method, headers, body, title, tags,
// retry; status and runMissed are not compared)

/**
 * Headers as the target would get them, for comparison: names lowercased, sorted by name (a stable
 * sort, so repeated names keep their order), plus the stored content type as a `content-type`
 * header when the headers have none (delivery sends it so; item definitions never have one).
 */
export const comparableHeaders = (definition: TriggerDefinition): HeaderPairs => {
  const pairs = definition.headers.map(([name, value]) => [name.toLowerCase(), value] as const)
  const hasContentType = pairs.some(([name]) => name === "content-type")
  const all = definition.contentType === null || hasContentType ? pairs : [...pairs, ["content-type", definition.contentType] as const]
  return [...all].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** The same pairs in the same order, names and values alike. */
const identicalPairs = (a: HeaderPairs, b: HeaderPairs): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    if (a[i]![0] !== b[i]![0] || a[i]![1] !== b[i]![1]) return false
  }
  return true
}

/** Identical headers and content type compare equal without building their comparable form (the common case of /declare). */
const sameHeaders = (a: TriggerDefinition, b: TriggerDefinition): boolean =>
  (a.contentType === b.contentType && identicalPairs(a.headers, b.headers)) ||
  JSON.stringify(comparableHeaders(a)) === JSON.stringify(comparableHeaders(b))

const sameBytes = (a: Uint8Array | null, b: Uint8Array | null): boolean => {
  if (a === null || b === null) return a === b
  if (a.byteLength !== b.byteLength) return false
  for (let i = 0; i < a.byteLength; i++) {
    if (a[i] !== b[i]) return false
  }
  return true
}

/** The same strings in the same order. */
const identicalList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean => {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return false
  }
  return true
}

/** Tags are a set: order does not count (neither list holds a repeat). */
const sameTags = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && (identicalList(a, b) || JSON.stringify([...a].sort()) === JSON.stringify([...b].sort()))

const sameRetry = (a: RetryPolicy | null, b: RetryPolicy | null): boolean =>
  a === null || b === null
    ? a === b
    : a.strategy === b.strategy && a.maxAttempts === b.maxAttempts && a.initialDelaySeconds === b.initialDelaySeconds &&
      a.maxDelaySeconds === b.maxDelaySeconds && a.jitter === b.jitter && a.retryOn === b.retryOn

/** url, method, headers, body, title, tags, retry: the names of those that differ, in that order, added to `changed`. */
const definitionChanges = (next: TriggerDefinition, stored: TriggerDefinition, changed: Array<string>): void => {
  if (next.url !== stored.url) changed.push("url")
  if (next.method !== stored.method) changed.push("method")
  if (!sameHeaders(next, stored)) changed.push("headers")
  if (!sameBytes(next.body, stored.body)) changed.push("body")
  if (next.title !== stored.title) changed.push("title")
  if (!sameTags(next.tags, stored.tags)) changed.push("tags")
  if (!sameRetry(next.retry, stored.retry)) changed.push("retry")
}

/**
 * changedFields of an item against a stored trigger of the same kind, in the order of
 * docs/declare-and-bulk.md "The answer": one-shot `scheduledAt` (exact milliseconds; a `now`-based time
 * is recomputed on every call, so it differs from one call to the next), generator `cronExpr` and `tz`;
 * then the definition fields.
 */
export const changedFields = (item: Item, stored: StoredTrigger): ReadonlyArray<string> => {
  const schedule = item.schedule
  const changed: Array<string> = []
  if (schedule._tag === "Once") {
    if (schedule.fireAtMs !== stored.scheduledAtMs) changed.push("scheduledAt")
  } else {
    if (schedule.cronExpr !== stored.cron?.cronExpr) changed.push("cronExpr")
    if (schedule.cronTz !== stored.cron?.cronTz) changed.push("tz")
  }
  definitionChanges(item.definition, stored.definition, changed)
  return changed
}

// ---------------------------------------------------------------------------------------------
// Planning one item

export interface MatchContext {
  readonly nowMs: number
  readonly runMissed: boolean
  readonly newId: () => string
}

/** Rule 7: a past absolute one-shot without runMissed is stored skipped; generators are active. */
export const statusOf = (schedule: ItemSchedule, context: MatchContext): PlannedTrigger["status"] => {
  if (schedule._tag === "Cron") return "active"
  const skipped = isPast(schedule.fireAtMs, context.nowMs) && !schedule.nowBased && !context.runMissed
  return skipped ? "skipped" : "registered"
}

const plan = (id: string, item: Item, context: MatchContext, digest: string | null): PlannedTrigger => ({
  id,
  kind: itemKind(item),
  status: statusOf(item.schedule, context),
  definition: item.definition,
  schedule: item.schedule,
  ...(digest === null ? {} : { digest })
})

export interface ItemOutcome {
  readonly entry: OperationEntry
  readonly write: ItemWrite | null
}

const entry = (operation: OperationName, item: Item, id: string, changed?: ReadonlyArray<string>): OperationEntry =>
  changed === undefined
    ? { operation, customKey: item.definition.customKey, kind: itemKind(item), id }
    : { operation, customKey: item.definition.customKey, kind: itemKind(item), id, changedFields: changed }

/** The only changedFields of a kind switch. */
export const kindSwitch = (from: Kind, to: Kind): string => `kind:${from}→${to}`

/**
 * The matching table. No match: a new trigger, `added` (or `skipped`, a past one-shot). Same kind,
 * nothing differs: `unchanged`. A generator, or a registered or skipped one-shot, that differs:
 * `updated` in place (a one-shot's status follows rule 7 again). A retrying one-shot that differs,
 * or a trigger of the other kind: `updated`, replaced by a new trigger (`alsoCancel` — e.g. a
 * replaced generator's instances — is cancelled in the same step).
 */
export const planItem = (
  item: Item,
  match: StoredTrigger | undefined,
  context: MatchContext,
  alsoCancel: ReadonlyArray<string> = [],
  digest: string | null = null
): ItemOutcome => {
  if (match === undefined) {
    const trigger = plan(context.newId(), item, context, digest)
    return { entry: entry(trigger.status === "skipped" ? "skipped" : "added", item, trigger.id), write: { _tag: "Insert", trigger } }
  }
  const replace = (changed: ReadonlyArray<string>): ItemOutcome => {
    const trigger = plan(context.newId(), item, context, digest)
    return {
      entry: entry("updated", item, trigger.id, changed),
      write: { _tag: "Replace", cancelIds: [match.id, ...alsoCancel], trigger }
    }
  }
  const kind = itemKind(item)
  if (kind !== match.kind) return replace([kindSwitch(match.kind, kind)])
  if (match.sameAsItem === true) return { entry: entry("unchanged", item, match.id), write: null }
  if (match.comparedFields === false) throw new Error(`the compared fields of trigger ${match.id} were not read`)
  const changed = changedFields(item, match)
  if (changed.length === 0) return { entry: entry("unchanged", item, match.id), write: null }
  if (match.status === "retrying") return replace(changed)
  return { entry: entry("updated", item, match.id, changed), write: { _tag: "Update", trigger: plan(match.id, item, context, digest) } }
}

// ---------------------------------------------------------------------------------------------
// Finding the match

/** A stored key; an empty-string key is never matched (rule 10). */
export const keyOf = (trigger: StoredTrigger): string | null =>
  trigger.definition.customKey === "" ? null : trigger.definition.customKey

/** Keyed pending one-shots (instances have no key) and active generators, by key. */
export const indexPendingByKey = (triggers: ReadonlyArray<StoredTrigger>): ReadonlyMap<string, ReadonlyArray<StoredTrigger>> => {
  const index = new Map<string, Array<StoredTrigger>>()
  for (const trigger of triggers) {
    const key = keyOf(trigger)
    if (key === null || !isPending(trigger) || trigger.generatorId !== null) continue
    const list = index.get(key)
    if (list === undefined) index.set(key, [trigger])
    else list.push(trigger)
  }
  return index
}

/**
 * The pending trigger an item's key matches. A key normally has one pending owner; should two exist
 * (docs/internals.md "/declare and /bulk": one created outside the tag, one by /declare), the one of
 * the item's kind is matched, then the one whose key scope is `preferredScope` (/declare: its tag, so a
 * kind switch replaces the trigger whose place in the tag it takes; /bulk: null, the unscoped owner
 * that /schedule also edits), then the oldest.
 */
export const matchFor = (
  index: ReadonlyMap<string, ReadonlyArray<StoredTrigger>>,
  item: Item,
  preferredScope: string | null = null
): StoredTrigger | undefined => {
  const key = item.definition.customKey
  const candidates = key === null ? [] : index.get(key) ?? []
  if (candidates.length < 2) return candidates[0]
  const kind = itemKind(item)
  const rank = (t: StoredTrigger) => (t.kind === kind ? 0 : 2) + ((t.keyScope ?? null) === preferredScope ? 0 : 1)
  return candidates.reduce((best, candidate) => (rank(candidate) < rank(best) ? candidate : best))
}

/** The instances among `triggers`, by generator id, in the order given. */
export const instancesByGenerator = (triggers: ReadonlyArray<StoredTrigger>): ReadonlyMap<string, ReadonlyArray<StoredTrigger>> => {
  const index = new Map<string, Array<StoredTrigger>>()
  for (const trigger of triggers) {
    if (trigger.generatorId === null) continue
    const list = index.get(trigger.generatorId)
    if (list === undefined) index.set(trigger.generatorId, [trigger])
    else list.push(trigger)
  }
  return index
}

/** Whether the ids strictly increase: then no id repeats. */
const increasingIds = (triggers: ReadonlyArray<StoredTrigger>): boolean => {
  for (let i = 1; i < triggers.length; i++) {
    if (!(triggers[i - 1]!.id < triggers[i]!.id)) return false
  }
  return true
}

/**
 * Triggers listed once each (first occurrence kept), so callers may pass overlapping reads. A list
 * in increasing id order without repeats (the store's reads, ordered by id) is returned as it is.
 */
export const distinctById = (triggers: ReadonlyArray<StoredTrigger>): ReadonlyArray<StoredTrigger> => {
  if (increasingIds(triggers)) return triggers
  const seen = new Set<string>()
  return triggers.filter((trigger) => {
    if (seen.has(trigger.id)) return false
    seen.add(trigger.id)
    return true
  })
}
