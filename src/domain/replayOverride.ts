// What a bulk replay may change for the attempt it queues, and for that attempt only
// (docs/bulk-actions.md "The request", `replay`): another target URL (an operator who moved a
// target) and headers to add, each replacing a stored header of the same name (case-insensitive);
// a Content-Type among them replaces the stored body's type. The stored trigger is never changed.
// Checked like the request of /schedule: an absolute http(s) URL, header names that are tokens,
// values without line breaks, text PostgreSQL can store, and none of the headers that describe a call
// (Host, Content-Length, hop-by-hop) or start with the prefix. Pure.
import { CALL_HEADERS, HTTP_TOKEN } from "./httpHeaders.ts"
import { checkScheduleTarget } from "./scheduleInput.ts"
import { unstorableCharacter, unstorableMessage } from "./storableText.ts"
import type { DeliveryRow, HeaderPairs } from "./trigger.ts"

export interface ReplayOverride {
  /** The URL to send to instead of the stored one; null keeps it. */
  readonly url: string | null
  /** Headers to add, in the order given (names as written). */
  readonly headers: HeaderPairs
}

export type DecodedOverride = { readonly _tag: "Ok"; readonly override: ReplayOverride } | { readonly _tag: "Err"; readonly message: string }

const REPLAY_FIELDS = ["url", "headers"]

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The message for a header a replay may not add, or a bad name or value; undefined when it is fine. */
const badHeader = (name: string, value: string, prefix: string): string | undefined => {
  const lower = name.toLowerCase()
  if (!HTTP_TOKEN.test(name)) return `Invalid header name: ${name}`
  if (CALL_HEADERS.has(lower) || lower.startsWith(`${prefix}-`)) return `replay.headers cannot set ${lower}`
  if (/[\r\n]/.test(value)) return `Invalid value of header ${name}: line breaks are not allowed`
  const character = unstorableCharacter(name) ?? unstorableCharacter(value)
  return character === undefined ? undefined : unstorableMessage(`header ${lower}`, character)
}

/** The `replay` object of POST /actions (or the MCP tool's arguments); `prefix` is the operator's (ttr). */
export const decodeReplayOverride = (json: unknown, prefix: string): DecodedOverride => {
  const err = (message: string): DecodedOverride => ({ _tag: "Err", message })
  if (!isObject(json)) return err("replay must be a JSON object")
  const unknown = Object.keys(json).find((key) => !REPLAY_FIELDS.includes(key))
  if (unknown !== undefined) return err(`Unknown replay field: ${unknown}`)
  let url: string | null = null
  if (json.url !== undefined) {
    if (typeof json.url !== "string") return err(`replay.url must be a string`)
    const target = checkScheduleTarget(json.url, [])
    if (target._tag === "Err") return err(target.message)
    const unstorable = unstorableCharacter(target.value.url)
    if (unstorable !== undefined) return err(unstorableMessage("replay.url", unstorable))
    url = target.value.url
  }
  const headers: Array<readonly [string, string]> = []
  if (json.headers !== undefined) {
    if (!isObject(json.headers) || Object.values(json.headers).some((value) => typeof value !== "string")) {
      return err("replay.headers must be an object of strings")
    }
    for (const [name, value] of Object.entries(json.headers as Record<string, string>)) {
      const bad = badHeader(name, value, prefix)
      if (bad !== undefined) return err(bad)
      headers.push([name, value])
    }
  }
  return { _tag: "Ok", override: { url, headers } }
}

/** Nothing to change: no override is stored at all. */
export const isNoOverride = (override: ReplayOverride): boolean => override.url === null && override.headers.length === 0

/** The row delivery sends for a replayed attempt: the override's URL and headers on top of the stored ones. */
export const applyReplayOverride = (row: DeliveryRow, override: ReplayOverride): DeliveryRow => {
  const replaced = new Set(override.headers.map(([name]) => name.toLowerCase()))
  const contentType = override.headers.findLast(([name]) => name.toLowerCase() === "content-type")?.[1]
  return {
    ...row,
    url: override.url ?? row.url,
    headers: [
      ...row.headers.filter(([name]) => !replaced.has(name.toLowerCase())),
      ...override.headers.filter(([name]) => name.toLowerCase() !== "content-type")
    ],
    contentType: contentType ?? row.contentType
  }
}
