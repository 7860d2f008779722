// Failure alerts (docs/dashboard.md), pure: the settings of a project's alert (a Slack-compatible webhook
// taking `{"text": …}`, e-mail recipients) with their checks and messages, and the text of one alert
// message, which reports every dead letter of the last minute (a burst gives one message), and every
// circuit of an origin that opened meanwhile.
import { BadRequest } from "./errors.ts"

export const MAX_RECIPIENTS = 20
/** Dead letters listed one by one in a message; the others are counted. */
export const LISTED_DEAD_LETTERS = 10
/** One message per alert at most this often. */
export const ALERT_GROUP_MS = 60_000

export interface AlertSettings {
  readonly webhookUrl: string | null
  readonly emailRecipients: ReadonlyArray<string>
}

const EMAIL = /^[^\s@<>,;"]+@[^\s@<>,;"]+$/

/** The settings of a PUT /alerts body, or the 400 naming the first bad field. */
export const decodeAlertSettings = (json: unknown): AlertSettings | BadRequest => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return new BadRequest("Body must be a JSON object")
  const body = json as Record<string, unknown>
  let webhookUrl: string | null = null
  if (body.webhookUrl !== undefined && body.webhookUrl !== null && body.webhookUrl !== "") {
    if (typeof body.webhookUrl !== "string") return new BadRequest("webhookUrl must be a string or null")
    let url: URL
    try {
      url = new URL(body.webhookUrl)
    } catch {
      return new BadRequest(`webhookUrl is not an absolute http:// or https:// URL: ${body.webhookUrl}`)
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return new BadRequest(`webhookUrl is not an absolute http:// or https:// URL: ${body.webhookUrl}`)
    }
    webhookUrl = body.webhookUrl
  }
  const recipients = body.emailRecipients ?? []
  if (!Array.isArray(recipients) || recipients.some((entry) => typeof entry !== "string")) {
    return new BadRequest("emailRecipients must be a list of e-mail addresses")
  }
  const emails = [...new Set((recipients as Array<string>).map((entry) => entry.trim()).filter((entry) => entry !== ""))]
  const bad = emails.find((entry) => !EMAIL.test(entry))
  if (bad !== undefined) return new BadRequest(`emailRecipients: "${bad}" is not an e-mail address`)
  if (emails.length > MAX_RECIPIENTS) return new BadRequest(`emailRecipients: at most ${MAX_RECIPIENTS} addresses`)
  return { webhookUrl, emailRecipients: emails }
}

export interface DeadLetterNote {
  readonly triggerId: string
  readonly url: string
  readonly error: string | null
  readonly failedAt: Date
}

export interface AlertMessage {
  readonly subject: string
  readonly text: string
}

/** The message for `total` dead letters of a project, listing the first of `listed`. */
export const deadLetterMessage = (projectName: string, total: number, listed: ReadonlyArray<DeadLetterNote>): AlertMessage => {
  const subject = `[timewheel] ${total} dead letter${total === 1 ? "" : "s"} in project ${projectName}`
  const lines = listed.slice(0, LISTED_DEAD_LETTERS).map((note) =>
    `• ${note.failedAt.toISOString()} trigger ${note.triggerId} → ${note.url}${note.error === null ? "" : ` (${note.error})`}`)
  const more = total - lines.length
  const text = [
    `${subject}: no further attempt will be made for ${total === 1 ? "this trigger" : "these triggers"}.`,
    ...lines,
    ...(more > 0 ? [`… and ${more} more (see Dead letters in the dashboard).`] : [])
  ].join("\n")
  return { subject, text }
}

/** A circuit of an origin that opened (docs/protecting-targets.md "Circuit breaker"). */
export interface CircuitOpeningNote {
  readonly origin: string
  /** `circuit opened for <n> s after <failure>`. */
  readonly error: string | null
  readonly openedAt: Date
}

/**
 * The message of a project's alert: its dead letters (as deadLetterMessage), with the circuits of
 * origins that opened since the last message listed first; `openings` of them in all.
 */
export const alertMessage = (
  projectName: string,
  deadLetters: { readonly total: number; readonly listed: ReadonlyArray<DeadLetterNote> },
  openings: { readonly total: number; readonly listed: ReadonlyArray<CircuitOpeningNote> }
): AlertMessage => {
  if (openings.total === 0) return deadLetterMessage(projectName, deadLetters.total, deadLetters.listed)
  const circuits = `${openings.total} circuit${openings.total === 1 ? "" : "s"} opened`
  const subject = deadLetters.total === 0
    ? `[timewheel] ${circuits} in project ${projectName}`
    : `[timewheel] ${circuits} and ${deadLetters.total} dead letter${deadLetters.total === 1 ? "" : "s"} in project ${projectName}`
  const lines = openings.listed.slice(0, LISTED_DEAD_LETTERS).map((note) =>
    `• ${note.openedAt.toISOString()} ${note.origin}: ${note.error ?? "circuit opened"}`)
  const more = openings.total - lines.length
  const text = [
    `${subject}: nothing is sent to ${openings.total === 1 ? "this origin" : "these origins"} until ${openings.total === 1 ? "its" : "each"} cooldown ends and a probe succeeds.`,
    ...lines,
    ...(more > 0 ? [`… and ${more} more (see Targets in the dashboard).`] : []),
    ...(deadLetters.total === 0 ? [] : ["", deadLetterMessage(projectName, deadLetters.total, deadLetters.listed).text])
  ].join("\n")
  return { subject, text }
}

export const testMessage = (projectName: string): AlertMessage => ({
  subject: `[timewheel] test alert for project ${projectName}`,
  text: `[timewheel] test alert for project ${projectName}: alerts of this project reach this target.`
})
