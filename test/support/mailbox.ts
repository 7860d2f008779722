// A local SMTP server for alert tests (the `smtp-server` package) on 127.0.0.1 only: no TLS, no
// authentication; every message it receives is kept (envelope and raw text); a recipient whose
// address starts with `bounce@` is refused (550), as a mail server refuses an unknown user. Closed
// with the scope.
import { Effect } from "effect"
import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

export interface Mail {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly raw: string
}

export interface Mailbox {
  readonly port: number
  /** SMTP_URL of this server. */
  readonly url: string
  readonly mails: ReadonlyArray<Mail>
}

export const mailbox = Effect.acquireRelease(
  Effect.promise(async () => {
    const mails: Array<Mail> = []
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      onRcptTo(address, _session, callback) {
        if (address.address.startsWith("bounce@")) return callback(Object.assign(new Error("no such user"), { responseCode: 550 }))
        callback()
      },
      onData(stream, session, callback) {
        const chunks: Array<Buffer> = []
        stream.on("data", (chunk: Buffer) => chunks.push(chunk))
        stream.on("end", () => {
          mails.push({
            from: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            raw: Buffer.concat(chunks).toString("utf8")
          })
          callback()
        })
      }
    })
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve())
    })
    const port = (server.server.address() as AddressInfo).port
    return { server, mailbox: { port, url: `smtp://127.0.0.1:${port}`, mails } satisfies Mailbox }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
).pipe(Effect.map(({ mailbox }) => mailbox))

/** A message's text body with quoted-printable soft breaks undone. */
export const mailText = (mail: Mail): string => mail.raw.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
