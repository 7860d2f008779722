// POST /declare as a pure diff (docs/declare-and-bulk.md "What the call does"): the validated items
// against the triggers carrying the tag, giving the response (`operations` in the order of "The
// answer", `summary`) and the writes: per item (insert / update in place / replace) in request order,
// then the cancellations. No I/O: new ids come from `newId`, the triggers from the store.
import type { Item } from "./item.ts"
import {
  cancelledEntry, distinctById, indexPendingByKey, instancesByGenerator, isPending, keyOf, matchFor, planItem, summarize
} from "./itemMatch.ts"
import type { ItemWrite, MatchContext, OperationEntry, StoredTrigger, Summary } from "./itemMatch.ts"

export interface DeclareInput {
  readonly tag: string
  /** Validated, the declared tag already in each item's tags (validateDeclareBody). */
  readonly items: ReadonlyArray<Item>
  readonly runMissed: boolean
  readonly nowMs: number
  /**
   * From the store (duplicates allowed, other statuses ignored): every trigger of the project
   * carrying `tag` whose status is registered, skipped, retrying, queued (one-shots and instances)
   * or active (generators); and every registered, retrying or queued instance of an active
   * generator carrying `tag`, whether or not the instance carries it. Order: oldest first (by id);
   * cancelled entries follow it.
   */
  readonly triggers: ReadonlyArray<StoredTrigger>
  readonly newId: () => string
  /** The digest each item's trigger is stored with (domain/itemDigest.ts), by the items' index. */
  readonly digests?: ReadonlyArray<string>
}

export interface DeclarePlan {
  readonly operations: ReadonlyArray<OperationEntry>
  readonly summary: Summary
  /** In request order, one per item that writes (unchanged items write nothing). */
  readonly itemWrites: ReadonlyArray<ItemWrite>
  /** After the item writes: every other trigger the call cancels (with or without an entry). */
  readonly cancelIds: ReadonlyArray<string>
  /**
   * Generators kept (unchanged or updated in place) whose upcoming instance this call cancels:
   * their next instance is to be created again (rule 5).
   */
  readonly refreshGeneratorIds: ReadonlyArray<string>
}

/** What happens to a trigger no item kept: nothing, cancelled with an entry, or cancelled silently. */
type Fate = "untouched" | "entry" | "silent"

interface CallFacts {
  readonly carriesTag: (trigger: StoredTrigger) => boolean
  /** Active generators carrying the tag: their live instances are cancelled (rule 5, rule 4). */
  readonly taggedGeneratorIds: ReadonlySet<string>
  /** Generators an item kept (unchanged or updated in place): their queued instances stay. */
  readonly keptGeneratorIds: ReadonlySet<string>
  /** Whether an item has this key (asked only of queued one-shots carrying the tag, so made on first use). */
  readonly isItemKey: (key: string) => boolean
}

/**
 * Instances. Pending (the upcoming one, a retrying one) → cancelled with an entry, kind `job`,
 * customKey null (rule 5; every keyless pending trigger with the tag, rule 4). Queued → stays
 * when its generator is kept (Recurring behaviour 4), cancelled silently with a generator this
 * call cancels or replaces (rules 4 and 6), cancelled with an entry when it carries the tag and
 * its generator is not a tagged active generator (a queued one-shot absent from items, rule 4).
 */
const instanceFate = (trigger: StoredTrigger, generatorId: string, facts: CallFacts): Fate => {
  if (isPending(trigger)) return facts.taggedGeneratorIds.has(generatorId) || facts.carriesTag(trigger) ? "entry" : "untouched"
  if (trigger.status !== "queued" || facts.keptGeneratorIds.has(generatorId)) return "untouched"
  if (facts.taggedGeneratorIds.has(generatorId)) return "silent"
  return facts.carriesTag(trigger) ? "entry" : "untouched"
}

/**
 * Rule 4 for triggers no item matched, among those carrying the tag: pending one-shots and
 * active generators (their key is absent from items, or they have none) and queued one-shots
 * whose key is absent or missing are cancelled with an entry; a queued one-shot whose key is in
 * items stays (rule 8). Running, completed and cancelled triggers are never touched.
 */
const fateOf = (trigger: StoredTrigger, facts: CallFacts): Fate => {
  if (trigger.generatorId !== null) return instanceFate(trigger, trigger.generatorId, facts)
  if (!facts.carriesTag(trigger)) return "untouched"
  if (isPending(trigger)) return "entry"
  if (trigger.kind === "job" && trigger.status === "queued") {
    const key = keyOf(trigger)
    return key === null || !facts.isItemKey(key) ? "entry" : "untouched"
  }
  return "untouched"
}

/** Live instances of a generator (upcoming, retrying, queued): cancelled along when it is replaced. */
const liveInstanceIds = (instances: ReadonlyArray<StoredTrigger>): ReadonlyArray<string> =>
  instances.filter((t) => isPending(t) || t.status === "queued").map((t) => t.id)

export const planDeclare = (input: DeclareInput): DeclarePlan => {
  const triggers = distinctById(input.triggers)
  const carriesTag = (trigger: StoredTrigger) => trigger.definition.tags.includes(input.tag)
  const context: MatchContext = { nowMs: input.nowMs, runMissed: input.runMissed, newId: input.newId }
  const index = indexPendingByKey(triggers.filter(carriesTag))
  const instances = instancesByGenerator(triggers)

  const itemEntries: Array<OperationEntry> = []
  const itemWrites: Array<ItemWrite> = []
  const matchedIds = new Set<string>()
  const keptGeneratorIds = new Set<string>()
  for (let i = 0; i < input.items.length; i++) {
    const item = input.items[i]!
    const match = matchFor(index, item, input.tag)
    const alsoCancel = match?.kind === "generator" ? liveInstanceIds(instances.get(match.id) ?? []) : []
    const outcome = planItem(item, match, context, alsoCancel, input.digests?.[i] ?? null)
    itemEntries.push(outcome.entry)
    if (outcome.write !== null) itemWrites.push(outcome.write)
    if (match === undefined) continue
    matchedIds.add(match.id)
    if (match.kind === "generator" && outcome.write?._tag !== "Replace") keptGeneratorIds.add(match.id)
  }

  let itemKeys: Set<string | null> | undefined
  const facts: CallFacts = {
    carriesTag,
    taggedGeneratorIds: new Set(triggers.filter((t) => t.kind === "generator" && isPending(t) && carriesTag(t)).map((t) => t.id)),
    keptGeneratorIds,
    isItemKey: (key) => (itemKeys ??= new Set(input.items.map((item) => item.definition.customKey))).has(key)
  }
  const cancelledByItems = new Set(itemWrites.flatMap((write) => (write._tag === "Replace" ? write.cancelIds : [])))
  const jobEntries: Array<OperationEntry> = []
  const generatorEntries: Array<OperationEntry> = []
  const cancelIds: Array<string> = []
  for (const trigger of triggers) {
    if (matchedIds.has(trigger.id)) continue
    const fate = fateOf(trigger, facts)
    if (fate === "untouched") continue
    if (!cancelledByItems.has(trigger.id)) cancelIds.push(trigger.id)
    if (fate === "entry") (trigger.kind === "generator" ? generatorEntries : jobEntries).push(cancelledEntry(trigger))
  }

  const operations = [...itemEntries, ...jobEntries, ...generatorEntries]
  return { operations, summary: summarize(operations), itemWrites, cancelIds, refreshGeneratorIds: [...keptGeneratorIds] }
}
