// Items of /declare (`items`) and /bulk (`upserts`), docs/declare-and-bulk.md "Items":
// decoding the JSON shape (any failure is the API's empty-body 400, `{_tag:"Shape"}`), then the
// check-table validation with its messages, giving stored definitions plus a schedule value.
// Also the /declare body itself. Pure: the request moment is a parameter.
import { Buffer } from "node:buffer"
import { encodeItemBody, itemHeaderPairs } from "./itemBody.ts"
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_DELAY_SECONDS,
  RETRY_ONS,
  RETRY_STRATEGIES,
  TRIGGER_DEFAULT_RETRY
} from "./retry.ts"
import type { RetryOn, RetryPolicy, RetryStrategy } from "./retry.ts"
import { parseScheduleValue, type ScheduleValue } from "./schedule.ts"
import { tooLongToIndex } from "./storableText.ts"
import type { HeaderPairs, TriggerDefinition, TriggerKind } from "./trigger.ts"

/** When an item fires: a one-shot time, or a generator's normalised cron expression and zone. */
export type ItemSchedule = ScheduleValue

/** A retry object as sent: types and enum words checked, ranges not yet. */
export interface RetryInput {
  readonly strategy?: RetryStrategy
  readonly maxAttempts?: number
  readonly initialDelaySeconds?: number
  readonly maxDelaySeconds?: number
  readonly jitter?: boolean
  readonly retryOn?: RetryOn
}

/** An item whose shape is right, defaults applied, not yet validated. */
export interface ItemInput {
  readonly url: string
  readonly scheduledAt: string
  /** An empty-string key is no key ("never matched later"). */
  readonly customKey: string | null
  readonly method: string
  readonly headers: HeaderPairs
  readonly body: Uint8Array | null
  /** An empty title is no title, as for `ttr-title`. */
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly retry: RetryInput | null
}

/** A valid item: what to store (contentType always null) and when it fires. */
export interface Item {
  readonly schedule: ItemSchedule
  readonly definition: TriggerDefinition
}

/** A body of the wrong shape: the API's empty 400; `reason` names the field for the error hint. */
export type Shape = { readonly _tag: "Shape"; readonly reason: string }
export type Invalid = { readonly _tag: "Invalid"; readonly message: string }
export type Decoded<A> = { readonly _tag: "Ok"; readonly value: A } | Shape

export const itemKind = (item: Item): TriggerKind => (item.schedule._tag === "Cron" ? "generator" : "job")

// ---------------------------------------------------------------------------------------------
// Shape

/**
 * Thrown inside the decoders only, turned into `{_tag:"Shape", reason}` at their boundary: `path`
 * locates the value (`items[2].url`, empty for the body itself), `problem` says what is wrong.
 */
class ShapeMismatch {
  readonly path: string
  readonly problem: string
  constructor(path: string, problem: string) {
    this.path = path
    this.problem = problem
  }
  get reason(): string {
    return `${this.path === "" ? "body" : this.path} ${this.problem}`
  }
}

/** Inside a decoder run by decodeWith: the value does not have the expected shape. */
export const mismatch = (problem: string, path = ""): never => {
  throw new ShapeMismatch(path, problem)
}

/** Runs a decoder of a part of the body: a mismatch inside it is located under `path` (`items[2]`). */
export const within = <A>(path: string, decode: () => A): A => {
  try {
    return decode()
  } catch (error) {
    if (!(error instanceof ShapeMismatch)) throw error
    const inner = error.path === "" ? "" : error.path.startsWith("[") ? error.path : `.${error.path}`
    throw new ShapeMismatch(`${path}${inner}`, error.problem)
  }
}

/** A list decoded entry by entry, each located as `<name>[<i>]`; not a list is a mismatch. */
export const decodeList = <A>(name: string, json: unknown, decode: (entry: unknown) => A): Array<A> => {
  if (!Array.isArray(json)) return mismatch("must be a list", name)
  const out = new Array<A>(json.length)
  let i = 0
  // one handler for the list (`within`'s, with the entry's path made only when it fails)
  try {
    for (; i < json.length; i++) out[i] = decode(json[i])
  } catch (error) {
    return within(`${name}[${i}]`, () => {
      throw error
    })
  }
  return out
}

export const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const isString = (v: unknown): v is string => typeof v === "string"

/** A JSON type a field must have: its test, and its name in a hint. */
export interface Kind<A> {
  readonly is: (value: unknown) => value is A
  readonly name: string
}
export const STRING: Kind<string> = { is: isString, name: "a string" }
const BOOLEAN: Kind<boolean> = { is: (v): v is boolean => typeof v === "boolean", name: "true or false" }
const NUMBER: Kind<number> = { is: (v): v is number => typeof v === "number", name: "a number" }
const LIST: Kind<ReadonlyArray<unknown>> = { is: Array.isArray, name: "a list" }
const STRING_LIST: Kind<ReadonlyArray<string>> = {
  is: (v): v is ReadonlyArray<string> => Array.isArray(v) && v.every(isString),
  name: "a list of strings"
}
/** Every own enumerable value a string (a loop: no array of the values made for each item). */
const allStrings = (o: Readonly<Record<string, unknown>>): boolean => {
  for (const name in o) {
    if (Object.hasOwn(o, name) && typeof o[name] !== "string") return false
  }
  return true
}
const STRING_RECORD: Kind<Readonly<Record<string, string>>> = {
  is: (v): v is Readonly<Record<string, string>> => isPlainObject(v) && allStrings(v),
  name: "an object of strings"
}
const oneOfKind = <A>(words: ReadonlyArray<A>): Kind<A> => ({
  is: (v): v is A => (words as ReadonlyArray<unknown>).includes(v),
  name: `one of ${words.join(", ")}`
})

/** How a JSON value is named in a hint: `null`, `a number`, `a list`… */
const jsonTypeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "a list" : typeof value === "object" ? "an object" : `a ${typeof value}`

/** An own field: undefined when absent; a mismatch when present but null or of the wrong type. */
export const optionalField = <A>(object: Readonly<Record<string, unknown>>, name: string, kind: Kind<A>): A | undefined => {
  if (!Object.hasOwn(object, name) || object[name] === undefined) return undefined
  const value = object[name]
  return kind.is(value) ? value : mismatch(`must be ${kind.name}, got ${jsonTypeOf(value)}`, name)
}

export const requiredField = <A>(object: Readonly<Record<string, unknown>>, name: string, kind: Kind<A>): A =>
  optionalField(object, name, kind) ?? mismatch(`is required (${kind.name})`, name)

/** Runs a decoder that may throw ShapeMismatch. */
export const decodeWith = <A>(decode: () => A): Decoded<A> => {
  try {
    return { _tag: "Ok", value: decode() }
  } catch (error) {
    if (error instanceof ShapeMismatch) return { _tag: "Shape", reason: error.reason }
    throw error
  }
}

export const decodeObject = (json: unknown): Readonly<Record<string, unknown>> =>
  isPlainObject(json) ? json : mismatch(`must be a JSON object, got ${jsonTypeOf(json)}`)

const decodeRetry = (json: unknown): RetryInput => {
  const o = decodeObject(json)
  const strategy = optionalField(o, "strategy", oneOfKind(RETRY_STRATEGIES))
  const maxAttempts = optionalField(o, "maxAttempts", NUMBER)
  const initialDelaySeconds = optionalField(o, "initialDelaySeconds", NUMBER)
  const maxDelaySeconds = optionalField(o, "maxDelaySeconds", NUMBER)
  const jitter = optionalField(o, "jitter", BOOLEAN)
  const retryOn = optionalField(o, "retryOn", oneOfKind(RETRY_ONS))
  return {
    ...(strategy === undefined ? {} : { strategy }),
    ...(maxAttempts === undefined ? {} : { maxAttempts }),
    ...(initialDelaySeconds === undefined ? {} : { initialDelaySeconds }),
    ...(maxDelaySeconds === undefined ? {} : { maxDelaySeconds }),
    ...(jitter === undefined ? {} : { jitter }),
    ...(retryOn === undefined ? {} : { retryOn })
  }
}

/** An own field that is present, null included. */
export const hasField = (o: Readonly<Record<string, unknown>>, name: string): boolean => Object.hasOwn(o, name) && o[name] !== undefined

/** The tags of an item that lists none: one array for all of them (tags are never changed in place). */
const NO_TAGS: ReadonlyArray<string> = Object.freeze([])

/** One item (throws ShapeMismatch). `body` is the one field where null is allowed (no body). */
export const decodeItem = (json: unknown): ItemInput => {
  const o = decodeObject(json)
  const customKey = optionalField(o, "customKey", STRING)
  const title = optionalField(o, "title", STRING)
  const headers = optionalField(o, "headers", STRING_RECORD)
  return {
    url: requiredField(o, "url", STRING),
    scheduledAt: optionalField(o, "scheduledAt", STRING) ?? "now",
    customKey: customKey === undefined || customKey === "" ? null : customKey,
    method: (optionalField(o, "method", STRING) ?? "GET").toUpperCase(),
    headers: headers === undefined ? [] : itemHeaderPairs(headers),
    body: encodeItemBody(Object.hasOwn(o, "body") ? o.body : undefined),
    title: title === undefined || title === "" ? null : title,
    tags: optionalField(o, "tags", STRING_LIST) ?? NO_TAGS,
    retry: hasField(o, "retry") ? within("retry", () => decodeRetry(o.retry)) : null
  }
}

/** A list of items named `name` in hints (`upserts[3].url …`). */
export const decodeItemList = (name: string, json: unknown): ReadonlyArray<ItemInput> => decodeList(name, json, decodeItem)

export interface DeclareBody {
  readonly tag: string
  readonly items: ReadonlyArray<ItemInput>
  readonly runMissed: boolean
}

/** POST /declare body: `{tag, items, runMissed?}`; unknown fields ignored; runMissed a JSON boolean. */
export const decodeDeclareBody = (json: unknown): Decoded<DeclareBody> =>
  decodeWith(() => {
    const o = decodeObject(json)
    return {
      tag: requiredField(o, "tag", STRING),
      items: decodeItemList("items", requiredField(o, "items", LIST)),
      runMissed: optionalField(o, "runMissed", BOOLEAN) ?? false
    }
  })

// ---------------------------------------------------------------------------------------------
// Values

const isWhole = (n: number, min: number, max: number): boolean => Number.isInteger(n) && n >= min && n <= max

/**
 * A retry object as a policy: omitted fields take TRIGGER_DEFAULT_RETRY (`{}` opts in with the
 * defaults); strategy `none` pins maxAttempts to 1 as the header form does. A number out of range
 * or not whole gives a message naming the field (`retry.maxAttempts must be …`).
 */
export const resolveRetry = (input: RetryInput): { readonly _tag: "Ok"; readonly policy: RetryPolicy } | Invalid => {
  const policy = { ...TRIGGER_DEFAULT_RETRY, ...input }
  if (!isWhole(policy.maxAttempts ?? 1, 1, MAX_ATTEMPTS_LIMIT)) {
    return { _tag: "Invalid", message: `retry.maxAttempts must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}` }
  }
  if (!isWhole(policy.initialDelaySeconds, 0, MAX_DELAY_SECONDS)) {
    return { _tag: "Invalid", message: `retry.initialDelaySeconds must be an integer from 0 to ${MAX_DELAY_SECONDS}` }
  }
  if (!isWhole(policy.maxDelaySeconds ?? 0, 0, MAX_DELAY_SECONDS)) {
    return { _tag: "Invalid", message: `retry.maxDelaySeconds must be an integer from 0 to ${MAX_DELAY_SECONDS}` }
  }
  return { _tag: "Ok", policy: policy.strategy === "none" ? { ...policy, maxAttempts: 1 } : policy }
}

/**
 * Why PostgreSQL cannot store a text value (docs/errors.md "Text the database cannot store"): a NUL
 * character, or an unpaired UTF-16 surrogate (not UTF-8: a text column would get U+FFFD instead, jsonb
 * refuses it). Undefined when storable. The message names the field: `<field> must not contain NUL
 * characters`.
 */
export const unstorableText = (field: string, text: string): string | undefined => {
  if (text.includes("\u0000")) return `${field} must not contain NUL characters`
  if (!text.isWellFormed()) return `${field} must not contain unpaired surrogates`
  return undefined
}

/** NUL or a surrogate: only then is unstorableText's exact check needed (a quick scan for the common case). */
const MAYBE_UNSTORABLE = /[\u0000\ud800-\udfff]/

/** The first unstorable text field of an item, in field order; the body is bytes, always storable. */
const firstUnstorableField = (input: ItemInput): string | undefined => {
  const check = (field: string, text: string | null) =>
    text === null || !MAYBE_UNSTORABLE.test(text) ? undefined : unstorableText(field, text)
  let problem = check("customKey", input.customKey) ?? check("url", input.url) ?? check("method", input.method)
  for (const [name, value] of input.headers) problem ??= check("headers", name) ?? check("headers", value)
  problem ??= check("title", input.title)
  for (const tag of input.tags) problem ??= check("tags", tag)
  problem ??= input.customKey === null ? undefined : tooLongToIndex("customKey", input.customKey)
  for (const tag of input.tags) problem ??= tooLongToIndex("tags", tag, " each")
  return problem
}

/** The first element that repeats an earlier one, in list order. */
export const firstRepeat = <A>(values: ReadonlyArray<A>): A | undefined => {
  if (values.length < 2) return undefined
  const seen = new Set<A>()
  for (const value of values) {
    if (seen.has(value)) return value
    seen.add(value)
  }
  return undefined
}

/** How the messages name the list and its entries: /declare `items`/`Item`, /bulk `upserts`/`Upsert`. */
export interface ItemWording {
  readonly list: string
  readonly entry: string
}
export const DECLARE_WORDING: ItemWording = { list: "items", entry: "Item" }
export const BULK_WORDING: ItemWording = { list: "upserts", entry: "Upsert" }

/**
 * Per item: repeated tag, scheduledAt, retry values, then text a database cannot store. The valid
 * item's tags are its own plus `declaredTag` when given and not among them (appended after the
 * checks, which read only the item's own tags).
 */
const validateItem = (input: ItemInput, nowMs: number, declaredTag: string | undefined): Item | Invalid => {
  const invalid = (message: string): Invalid => ({ _tag: "Invalid", message })
  const repeatedTag = firstRepeat(input.tags)
  if (repeatedTag !== undefined) return invalid(`duplicate tag "${repeatedTag}" in tags`)
  // the header's own reading and messages (Invalid date / duration / cron, Unknown pipe operation)
  const schedule = parseScheduleValue(input.scheduledAt, nowMs)
  if (schedule._tag === "Err") return invalid(schedule.message)
  const retry = input.retry === null ? null : resolveRetry(input.retry)
  if (retry !== null && retry._tag === "Invalid") return retry
  const unstorable = firstUnstorableField(input)
  if (unstorable !== undefined) return invalid(unstorable)
  const { url, method, headers, body, title, customKey } = input
  const tags = declaredTag === undefined || input.tags.includes(declaredTag) ? input.tags : [...input.tags, declaredTag]
  const definition = { url, method, headers, body, contentType: null, title, tags, customKey, retry: retry?.policy ?? null }
  return { schedule: schedule.value, definition }
}

/** The first custom key that repeats an earlier one, in list order (keyless items skipped). */
const firstRepeatedKey = (inputs: ReadonlyArray<ItemInput>): string | undefined => {
  const seen = new Set<string>()
  for (const input of inputs) {
    const key = input.customKey
    if (key === null) continue
    if (seen.has(key)) return key
    seen.add(key)
  }
  return undefined
}

/**
 * The check order of docs/declare-and-bulk.md "Errors", first error only: a repeated customKey over the
 * whole list first (`Duplicate customKey in <list>: <key>`), then item by item in request order
 * `<Entry> <key>: …` (`<key>` is `(no customKey)` for keyless items). `declaredTag` (/declare) is
 * appended to each item's tags after its own tags were checked, unless the item lists it already.
 */
export const validateItems = (
  inputs: ReadonlyArray<ItemInput>,
  nowMs: number,
  wording: ItemWording,
  declaredTag?: string
): { readonly _tag: "Ok"; readonly items: ReadonlyArray<Item> } | Invalid => {
  const repeatedKey = firstRepeatedKey(inputs)
  if (repeatedKey !== undefined) return { _tag: "Invalid", message: `Duplicate customKey in ${wording.list}: ${repeatedKey}` }
  const items = new Array<Item>(inputs.length)
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]!
    const result = validateItem(input, nowMs, declaredTag)
    if ("_tag" in result) {
      return { _tag: "Invalid", message: `${wording.entry} ${input.customKey ?? "(no customKey)"}: ${result.message}` }
    }
    items[i] = result
  }
  return { _tag: "Ok", items }
}

/** A decoded /declare body validated: the declared tag first (`tag must not contain …`), then the items. */
export const validateDeclareBody = (
  body: DeclareBody,
  nowMs: number
): { readonly _tag: "Ok"; readonly tag: string; readonly items: ReadonlyArray<Item>; readonly runMissed: boolean } | Invalid => {
  const tagProblem = unstorableText("tag", body.tag) ?? tooLongToIndex("tag", body.tag)
  if (tagProblem !== undefined) return { _tag: "Invalid", message: tagProblem }
  const items = validateItems(body.items, nowMs, DECLARE_WORDING, body.tag)
  return items._tag === "Invalid" ? items : { _tag: "Ok", tag: body.tag, items: items.items, runMissed: body.runMissed }
}
