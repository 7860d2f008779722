// The checks of a /schedule or /cancel call in the order of docs/scheduling.md ("Errors", and the
// table of "DELETE /cancel") with their messages, whichever front end read it: the HTTP routes from `ttr-`
// headers (api/scheduleRequest.ts, api/schedule.ts), the MCP tools from JSON arguments. /schedule
// has two steps around the key check, which sits between them: the target (URL, then tags), then
// the rest (scheduling value, retry policy, title, run-missed, storable text) giving the command.
// Where the two forms differ (a retry policy from headers or from an object, a boolean from a
// header), the front end hands a reader that this runs in its turn; messages that name a header
// name what the front end calls it. Pure: the request moment is a parameter.
import type { RetryPolicy } from "./retry.ts"
import { parseScheduleValue, type ScheduleCommand } from "./schedule.ts"
import { tooLongToIndex, unstorableCharacter, unstorableMessage } from "./storableText.ts"
import { parseTagList } from "./tags.ts"
import type { HeaderPairs, TriggerDefinition } from "./trigger.ts"

export type Checked<A> = { readonly _tag: "Ok"; readonly value: A } | { readonly _tag: "Err"; readonly message: string }

const ok = <A>(value: A): Checked<A> => ({ _tag: "Ok", value })
const err = (message: string): Checked<never> => ({ _tag: "Err", message })

export interface ScheduleTarget {
  /** Trimmed. */
  readonly url: string
  readonly tags: ReadonlyArray<string>
}

const isAbsoluteHttpUrl = (value: string) => {
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
  } catch {
    return false
  }
}

/**
 * Before the key: `Invalid URL: <url>` (an absolute http(s) URL, once trimmed), then the tags rules
 * over the entries as sent (`Maximum 10 tags allowed`, `Tag too long …`, `Invalid tag …`).
 */
export const checkScheduleTarget = (url: string, tagEntries: ReadonlyArray<string>): Checked<ScheduleTarget> => {
  if (!isAbsoluteHttpUrl(url.trim())) return err(`Invalid URL: ${url}`)
  const tags = parseTagList(tagEntries)
  if (tags._tag === "Err") return err(tags.message)
  return ok({ url: url.trim(), tags: tags.tags })
}

/** What follows the key check; the readers run in the documented order, each only when its turn comes. */
export interface ScheduleInput {
  readonly projectId: string
  readonly target: ScheduleTarget
  /** `ttr-scheduled-at` / `scheduledAt`; absent is read as empty (`Invalid date: `). */
  readonly scheduledAt: string
  /** The per-trigger retry policy (null: none), read after the scheduling value. */
  readonly retry: () => Checked<RetryPolicy | null>
  readonly title: string | undefined
  /** How messages name the title: `ttr-title` for the header, `title` for the tool. */
  readonly titleName: string
  /** How messages name the custom key: `ttr-custom-key` for the header, `customKey` for the tool. */
  readonly customKeyName: string
  /** Read after the title, for one-shot values only. */
  readonly runMissed: () => Checked<boolean>
  readonly customKey: string | undefined
  readonly triggerId: string | undefined
  /** The front end's last check: the message for text PostgreSQL cannot store, if any. */
  readonly unstorable: () => string | undefined
  readonly method: string
  readonly headers: HeaderPairs
  readonly body: Uint8Array | null
  readonly contentType: string | null
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/**
 * After the key: the scheduling value (`Invalid date`, `Unknown pipe operation`, `Invalid duration`,
 * `Invalid cron expression`), the retry policy, the title (printable ASCII: `Invalid <title>: ASCII
 * text only`) and run-missed (both ignored for `cron(...)` values), then unstorable text. Empty
 * title, custom key and trigger id count as absent.
 */
export const scheduleCommandOf = (input: ScheduleInput, nowMs: number): Checked<ScheduleCommand> => {
  const parsedValue = parseScheduleValue(input.scheduledAt, nowMs)
  if (parsedValue._tag === "Err") return err(parsedValue.message)
  const value = parsedValue.value
  const retry = input.retry()
  if (retry._tag === "Err") return retry
  // ttr-title and ttr-run-missed have no effect on recurring triggers: not even read for cron
  const recurring = value._tag === "Cron"
  const title = recurring ? undefined : input.title
  if (title !== undefined && !PRINTABLE_ASCII.test(title)) return err(`Invalid ${input.titleName}: ASCII text only`)
  const runMissed = recurring ? ok(false) : input.runMissed()
  if (runMissed._tag === "Err") return runMissed
  const unstorable = input.unstorable()
  if (unstorable !== undefined) return err(unstorable)
  const { customKey, triggerId } = input
  const keyTooLong = customKey === undefined ? undefined : tooLongToIndex(input.customKeyName, customKey)
  if (keyTooLong !== undefined) return err(keyTooLong)
  const definition: TriggerDefinition = {
    url: input.target.url,
    method: input.method,
    headers: input.headers,
    body: input.body,
    contentType: input.contentType,
    title: title === undefined || title === "" ? null : title,
    tags: input.target.tags,
    customKey: customKey === undefined || customKey === "" ? null : customKey,
    retry: retry.value
  }
  return ok({
    projectId: input.projectId,
    value,
    definition,
    triggerId: triggerId === undefined || triggerId === "" ? null : triggerId,
    runMissed: runMissed.value
  })
}

export type CancelTarget = { readonly _tag: "Id"; readonly id: string } | { readonly _tag: "CustomKey"; readonly customKey: string }

/** How the /cancel messages name the two identifiers: `ttr-trigger-id` … `header`, or the tool's arguments. */
export interface CancelNames {
  readonly id: string
  readonly customKey: string
  /** `header` or `argument`. */
  readonly noun: string
}

/**
 * The identifiers, before the key: exactly one of them, not empty (`Must provide either <id> or
 * <customKey> <noun>`, `Provide either <id> or <customKey>, not both`); a custom key is looked up as
 * text, so one PostgreSQL cannot store is a 400 naming it.
 */
export const cancelTargetOf = (id: string | undefined, customKey: string | undefined, names: CancelNames): Checked<CancelTarget> => {
  if ((id === undefined && customKey === undefined) || id === "" || customKey === "") {
    return err(`Must provide either ${names.id} or ${names.customKey} ${names.noun}`)
  }
  if (id !== undefined && customKey !== undefined) return err(`Provide either ${names.id} or ${names.customKey}, not both`)
  if (id !== undefined) return ok({ _tag: "Id", id })
  const unstorable = unstorableCharacter(customKey!)
  if (unstorable !== undefined) return err(unstorableMessage(names.customKey, unstorable))
  return ok({ _tag: "CustomKey", customKey: customKey! })
}
