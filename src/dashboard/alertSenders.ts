// How alert messages leave (issue 15): a Slack-compatible incoming webhook gets `{"text": …}` by POST
// (Slack, Mattermost, Rocket.Chat and others take it), e-mail goes through the SMTP server of
// SMTP_URL with nodemailer. Each send is bounded (10 s webhook, about 30 s SMTP) and never retried:
// its outcome, or the error as one line, is what the caller records. nodemailer is loaded only when
// SMTP_URL is set (a few MB less resident memory otherwise).
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Transporter } from "nodemailer"
import { request } from "undici"
import { AppConfig } from "../config.ts"
import type { AlertMessage } from "../domain/alerts.ts"

const WEBHOOK_TIMEOUT_MS = 10_000

/** A send's outcome: null when the target took it, else the error as one line. */
export type SendOutcome = string | null

export class AlertSenders extends Context.Service<AlertSenders, {
  /** Whether SMTP_URL is set (without it, e-mail recipients get nothing). */
  readonly emailConfigured: boolean
  readonly webhook: (url: string, message: AlertMessage) => Effect.Effect<SendOutcome>
  readonly email: (recipients: ReadonlyArray<string>, message: AlertMessage) => Effect.Effect<SendOutcome>
}>()("timewheel/AlertSenders") {
  static readonly layer = Layer.effect(AlertSenders, Effect.gen(function*() {
    const config = yield* AppConfig
    const smtpUrl = config.smtpUrl
    const transport: Transporter | undefined = smtpUrl === undefined ? undefined : yield* Effect.promise(async () => {
      const nodemailer = (await import("nodemailer")).default
      return nodemailer.createTransport(smtpUrl, {
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000
      } as Parameters<typeof nodemailer.createTransport>[1])
    })
    if (transport !== undefined) yield* Effect.addFinalizer(() => Effect.sync(() => transport.close()))
    return AlertSenders.of({
      emailConfigured: transport !== undefined,
      webhook: (url, message) =>
        Effect.promise(async (): Promise<SendOutcome> => {
          try {
            const response = await request(url, {
              method: "POST",
              headers: { "content-type": "application/json", "user-agent": "timewheel" },
              body: JSON.stringify({ text: message.text }),
              signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)
            })
            const text = await response.body.text()
            if (response.statusCode >= 200 && response.statusCode < 300) return null
            return oneLine(`HTTP ${response.statusCode}${text === "" ? "" : `: ${text}`}`)
          } catch (error) {
            return oneLine(describe(error))
          }
        }),
      email: (recipients, message) =>
        Effect.promise(async (): Promise<SendOutcome> => {
          if (transport === undefined) return "SMTP_URL is not set"
          try {
            await transport.sendMail({ from: config.smtpFrom, to: [...recipients], subject: message.subject, text: message.text })
            return null
          } catch (error) {
            return oneLine(describe(error))
          }
        })
    })
  }))
}

const describe = (error: unknown): string => {
  const e = error as { readonly name?: string; readonly message?: string; readonly code?: string; readonly cause?: { readonly code?: string } }
  const code = e.code ?? e.cause?.code
  return `${e.message ?? String(error)}${code !== undefined && !(e.message ?? "").includes(code) ? ` (${code})` : ""}`
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 300)
