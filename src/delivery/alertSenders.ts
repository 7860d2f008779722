// How alert messages leave (docs/dashboard.md): a Slack-compatible incoming webhook gets `{"text": …}`
// by POST (Slack, Mattermost, Rocket.Chat and others take it), e-mail goes through the SMTP server of
// SMTP_URL with nodemailer. Each send is bounded (10 s webhook, about 30 s SMTP) and never retried:
// its outcome, or the error as one line, is what the caller records. nodemailer is loaded only when
// SMTP_URL is set (a few MB less resident memory otherwise).
// Webhooks leave through an Agent of their own whose connections pass the private-target guard of
// deliveries (lib/privateTargets.ts) when BLOCK_PRIVATE_TARGETS is on: a webhook URL is a project's
// input like a target URL. SMTP does not: SMTP_URL is the operator's own setting, typically a relay on
// a private network, and the recipients' addresses only name mailboxes on it. Of a webhook's answer
// only the first WEBHOOK_ANSWER_BYTES are read (to quote an error).
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as net from "node:net"
import type { Transporter } from "nodemailer"
import { Agent, request } from "undici"
import { AppConfig } from "../config.ts"
import type { AlertMessage } from "../domain/alerts.ts"
import { targetConnector } from "../lib/privateTargets.ts"

const WEBHOOK_TIMEOUT_MS = 10_000
/** What is read of a webhook's answer: an error line quotes at most 300 characters of it. */
const WEBHOOK_ANSWER_BYTES = 1024

export interface AlertSendersOptions {
  /** Resolver of webhook host names (default `dns.lookup`); tests inject one so no query leaves the machine. */
  readonly lookup?: net.LookupFunction | undefined
}

/** A send's outcome: null when the target took it, else the error as one line. */
export type SendOutcome = string | null

export class AlertSenders extends Context.Service<AlertSenders, {
  /** Whether SMTP_URL is set (without it, e-mail recipients get nothing). */
  readonly emailConfigured: boolean
  readonly webhook: (url: string, message: AlertMessage) => Effect.Effect<SendOutcome>
  readonly email: (recipients: ReadonlyArray<string>, message: AlertMessage) => Effect.Effect<SendOutcome>
}>()("timewheel/AlertSenders") {
  static readonly layer = Layer.effect(AlertSenders, Effect.suspend(() => make({})))
  /** With a resolver of its own (tests). */
  static readonly layerWith = (options: AlertSendersOptions) => Layer.effect(AlertSenders, make(options))
}

const make = (options: AlertSendersOptions) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          connect: targetConnector({ blockPrivateTargets: config.blockPrivateTargets, timeoutMs: WEBHOOK_TIMEOUT_MS, lookup: options.lookup }),
          connections: 8
        })),
      (agent) => Effect.promise(() => agent.destroy().catch(() => {}))
    )
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
              dispatcher: agent,
              headers: { "content-type": "application/json", "user-agent": "timewheel" },
              body: JSON.stringify({ text: message.text }),
              signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)
            })
            const text = await answerPrefix(response.body)
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
  })

/** The first WEBHOOK_ANSWER_BYTES of an answer as text; the rest is not read (the connection is dropped). */
const answerPrefix = async (body: AsyncIterable<Uint8Array> & { destroy: () => unknown }): Promise<string> => {
  const chunks: Array<Uint8Array> = []
  let length = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    length += chunk.byteLength
    if (length >= WEBHOOK_ANSWER_BYTES) {
      body.destroy()
      break
    }
  }
  return Buffer.concat(chunks).subarray(0, WEBHOOK_ANSWER_BYTES).toString("utf8")
}

const describe = (error: unknown): string => {
  const e = error as { readonly name?: string; readonly message?: string; readonly code?: string; readonly cause?: { readonly code?: string } }
  const code = e.code ?? e.cause?.code
  return `${e.message ?? String(error)}${code !== undefined && !(e.message ?? "").includes(code) ? ` (${code})` : ""}`
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 300)
