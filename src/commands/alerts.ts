// A project's failure alerts as use cases (docs/dashboard.md): read and replace its settings (a webhook URL
// and e-mail recipients, checked by domain/alerts.ts), with its latest messages; and a test message
// sent at once to every target, whose outcomes are recorded like those of real alerts.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { AlertSenders } from "../delivery/alertSenders.ts"
import { type AlertMessage, type AlertSettings, decodeAlertSettings, testMessage } from "../domain/alerts.ts"
import { BadRequest } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { alertsGet, alertsPut, alertsRecentSends, alertsRecordSends } from "../store/alerts.ts"
import { projectsNameOf } from "../store/projects.ts"
import { orUnavailable } from "../store/unavailable.ts"

const RECENT = 20

/** The settings, whether e-mail can be sent at all, and the latest messages (newest first). */
export const getAlerts = (projectId: string) =>
  orUnavailable(Effect.gen(function*() {
    const senders = yield* AlertSenders
    const alert = yield* alertsGet(projectId)
    const recent = yield* alertsRecentSends({ projectId, limit: RECENT })
    return {
      ...alert,
      emailConfigured: senders.emailConfigured,
      recent: recent.map((send) => ({ ...send, sentAt: send.sentAt.toISOString() }))
    }
  }))

/** Replaces the settings (a bad field: 400 naming it); the settings as after. */
export const putAlerts = (projectId: string, json: unknown) =>
  orUnavailable(Effect.gen(function*() {
    const decoded = decodeAlertSettings(json)
    if (decoded instanceof BadRequest) return yield* Effect.fail(decoded)
    yield* alertsPut({ projectId, alert: decoded, nowMs: yield* Clock.currentTimeMillis })
    return yield* getAlerts(projectId)
  }))

/** Sends `message` to each target of `alert` at once; the outcome of each, recorded. */
export const sendToTargets = (input: {
  readonly projectId: string
  readonly alert: AlertSettings
  readonly message: AlertMessage
  readonly deadLetters: number
  readonly circuitOpenings?: number
}) =>
  Effect.gen(function*() {
    const senders = yield* AlertSenders
    const sends: Array<Effect.Effect<{ readonly channel: "webhook" | "email"; readonly error: string | null }>> = []
    if (input.alert.webhookUrl !== null) {
      sends.push(Effect.map(senders.webhook(input.alert.webhookUrl, input.message), (error) => ({ channel: "webhook" as const, error })))
    }
    if (input.alert.emailRecipients.length > 0) {
      sends.push(Effect.map(senders.email(input.alert.emailRecipients, input.message), (error) => ({ channel: "email" as const, error })))
    }
    const outcomes = yield* Effect.all(sends, { concurrency: "unbounded" })
    const nowMs = yield* Clock.currentTimeMillis
    yield* alertsRecordSends(outcomes.map((outcome) => ({
      id: uuidv7(nowMs), projectId: input.projectId, channel: outcome.channel, sentAt: new Date(nowMs),
      deadLetters: input.deadLetters, circuitOpenings: input.circuitOpenings ?? 0,
      test: input.deadLetters === 0 && (input.circuitOpenings ?? 0) === 0, error: outcome.error
    })))
    return outcomes
  })

/** The "send a test alert" button: 400 when the project has no target; each target's outcome. */
export const sendTestAlert = (projectId: string) =>
  orUnavailable(Effect.gen(function*() {
    const alert = yield* alertsGet(projectId)
    if (alert.webhookUrl === null && alert.emailRecipients.length === 0) {
      return yield* Effect.fail(new BadRequest("No alert target: set a webhook URL or e-mail recipients first"))
    }
    const name = (yield* projectsNameOf(projectId)) ?? projectId
    const outcomes = yield* sendToTargets({ projectId, alert, message: testMessage(name), deadLetters: 0 })
    return { results: outcomes }
  }))
