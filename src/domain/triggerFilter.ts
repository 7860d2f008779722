// The trigger filter shared by GET /jobs and the bulk actions (docs/bulk-actions.md "The filter"): status,
// outcome (how a finished trigger ended), kind, tag, custom key, deadLetter (the trigger's latest execution is a dead letter) and the
// half-open range [scheduledFrom, scheduledTo) of its scheduled time (a generator's is the time of
// its upcoming instance, as GET /jobs shows it). One decoder for both ways in: query text (GET /jobs,
// where `deadLetter` is the word true or false) and JSON values (POST /actions, MCP tools), with the
// same messages, so a previewed set and an acted-on set are read alike. Pure.
import { parseIsoDate } from "./scheduledAt.ts"
import { unstorableCharacter, unstorableMessage } from "./storableText.ts"
import { JOB_OUTCOMES, type JobOutcome, TRIGGER_KINDS, TRIGGER_STATUSES, type TriggerKind, type TriggerStatus } from "./trigger.ts"

export const FILTER_FIELDS = ["status", "outcome", "kind", "tag", "customKey", "deadLetter", "scheduledFrom", "scheduledTo"] as const
export type FilterField = (typeof FILTER_FIELDS)[number]

export interface TriggerFilter {
  readonly status?: TriggerStatus | undefined
  /** How a finished trigger ended (domain/trigger.ts outcomeOf). */
  readonly outcome?: JobOutcome | undefined
  readonly kind?: TriggerKind | undefined
  readonly tag?: string | undefined
  readonly customKey?: string | undefined
  /** true: the latest execution is a dead letter; false: it is not (or there is none). */
  readonly deadLetter?: boolean | undefined
  /** Scheduled at or after (epoch ms). */
  readonly scheduledFromMs?: number | undefined
  /** Scheduled before (epoch ms). */
  readonly scheduledToMs?: number | undefined
}

/** The raw values of the fields, as a query or a JSON object gives them (absent: undefined). */
export type FilterInput = Readonly<Partial<Record<FilterField, unknown>>>

export type DecodedFilter = { readonly _tag: "Ok"; readonly filter: TriggerFilter } | { readonly _tag: "Err"; readonly message: string }

/** `query`: every value is text (GET /jobs); `json`: JSON values (a boolean is a boolean). */
export type FilterForm = "query" | "json"

/** A bad field, thrown by the field readers and caught by the decoder. */
class Invalid extends Error {}

const oneOf = <A extends string>(name: string, value: unknown, values: ReadonlyArray<A>): A | undefined => {
  if (value === undefined) return undefined
  if (typeof value === "string" && (values as ReadonlyArray<string>).includes(value)) return value as A
  throw new Invalid(`${name} must be one of ${values.join(", ")}`)
}

const text = (name: string, value: unknown): string | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "string") throw new Invalid(`${name} must be a string`)
  if (value === "") throw new Invalid(`${name} must not be empty`)
  const unstorable = unstorableCharacter(value)
  if (unstorable !== undefined) throw new Invalid(unstorableMessage(name, unstorable))
  return value
}

const flag = (name: string, value: unknown, form: FilterForm): boolean | undefined => {
  if (value === undefined) return undefined
  if (typeof value === "boolean" && form === "json") return value
  if (value === "true" && form === "query") return true
  if (value === "false" && form === "query") return false
  throw new Invalid(`${name} must be true or false`)
}

const date = (name: string, value: unknown): number | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "string") throw new Invalid(`${name} must be an ISO 8601 date`)
  const ms = parseIsoDate(value.trim())
  if (ms === undefined) throw new Invalid(`Invalid date: ${value}`)
  return ms
}

/** Checks each field in FILTER_FIELDS order (the first bad one is the message), then the range. */
export const decodeTriggerFilter = (input: FilterInput, form: FilterForm): DecodedFilter => {
  try {
    const filter: TriggerFilter = {
      status: oneOf("status", input.status, TRIGGER_STATUSES),
      outcome: oneOf("outcome", input.outcome, JOB_OUTCOMES),
      kind: oneOf("kind", input.kind, TRIGGER_KINDS),
      tag: text("tag", input.tag),
      customKey: text("customKey", input.customKey),
      deadLetter: flag("deadLetter", input.deadLetter, form),
      scheduledFromMs: date("scheduledFrom", input.scheduledFrom),
      scheduledToMs: date("scheduledTo", input.scheduledTo)
    }
    if (filter.scheduledFromMs !== undefined && filter.scheduledToMs !== undefined && filter.scheduledFromMs >= filter.scheduledToMs) {
      throw new Invalid("scheduledFrom must be before scheduledTo")
    }
    return { _tag: "Ok", filter }
  } catch (error) {
    if (error instanceof Invalid) return { _tag: "Err", message: error.message }
    throw error
  }
}

/** A JSON `filter` object (POST /actions, MCP): an object whose keys are filter fields, then its values. */
export const decodeFilterObject = (json: unknown): DecodedFilter => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return { _tag: "Err", message: "filter must be a JSON object" }
  const unknown = Object.keys(json).find((key) => !(FILTER_FIELDS as ReadonlyArray<string>).includes(key))
  if (unknown !== undefined) return { _tag: "Err", message: `Unknown filter field: ${unknown}` }
  return decodeTriggerFilter(json as FilterInput, "json")
}

/** The filter as JSON, fields in FILTER_FIELDS order, times as ISO (what an action shows and stores). */
export const filterJson = (filter: TriggerFilter): Record<string, string | boolean> => {
  const json: Record<string, string | boolean> = {}
  if (filter.status !== undefined) json.status = filter.status
  if (filter.outcome !== undefined) json.outcome = filter.outcome
  if (filter.kind !== undefined) json.kind = filter.kind
  if (filter.tag !== undefined) json.tag = filter.tag
  if (filter.customKey !== undefined) json.customKey = filter.customKey
  if (filter.deadLetter !== undefined) json.deadLetter = filter.deadLetter
  if (filter.scheduledFromMs !== undefined) json.scheduledFrom = new Date(filter.scheduledFromMs).toISOString()
  if (filter.scheduledToMs !== undefined) json.scheduledTo = new Date(filter.scheduledToMs).toISOString()
  return json
}

/** No field given: for a cancel, a filter that would match every trigger of the project. */
export const isEmptyFilter = (filter: TriggerFilter): boolean => Object.keys(filterJson(filter)).length === 0
