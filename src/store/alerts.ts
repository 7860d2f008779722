// Failure alerts (schema migration 6): each project's alert settings, the outbox of dead letters the
// executions trigger fills for projects with an alert (and of circuits of origins that opened:
// store/targetCircuits.ts), what each message did (alert_sends), and the
// grouping: a project's outbox is taken whole at most once per minute (next_send_at), by one node
// (the settings row locked, SKIP LOCKED), and the message sent after the commit.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { CircuitOpeningNote, DeadLetterNote } from "../domain/alerts.ts"

export interface StoredAlert {
  readonly webhookUrl: string | null
  readonly emailRecipients: ReadonlyArray<string>
}

export interface AlertSend {
  readonly channel: "webhook" | "email"
  readonly sentAt: Date
  readonly deadLetters: number
  /** Circuits of origins the message reported opened. */
  readonly circuitOpenings: number
  readonly test: boolean
  readonly error: string | null
}

export const alertsGet = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ webhook_url: string | null; email_recipients: Array<string> }>`
    SELECT webhook_url, email_recipients FROM project_alerts WHERE project_id = ${projectId}`
  const row = rows[0]
  return { webhookUrl: row?.webhook_url ?? null, emailRecipients: row?.email_recipients ?? [] } satisfies StoredAlert
})

export const alertsPut = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly alert: StoredAlert; readonly nowMs: number }) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO project_alerts (project_id, webhook_url, email_recipients, updated_at)
    VALUES (${input.projectId}, ${input.alert.webhookUrl}, ${[...input.alert.emailRecipients]}::text[], ${new Date(input.nowMs)})
    ON CONFLICT (project_id) DO UPDATE SET webhook_url = excluded.webhook_url,
      email_recipients = excluded.email_recipients, updated_at = excluded.updated_at`
})

/** The project's latest alert messages, newest first. */
export const alertsRecentSends = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly limit: number }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{
    channel: "webhook" | "email"; sent_at: Date; dead_letters: number; circuit_openings: number; test: boolean; error: string | null
  }>`
    SELECT channel, sent_at, dead_letters, circuit_openings, test, error FROM alert_sends WHERE project_id = ${input.projectId}
    ORDER BY sent_at DESC, id DESC LIMIT ${input.limit}`
  return rows.map((row): AlertSend => ({
    channel: row.channel, sentAt: row.sent_at, deadLetters: row.dead_letters, circuitOpenings: row.circuit_openings, test: row.test, error: row.error
  }))
})

export const alertsRecordSends = Effect.fnUntraced(function*(sends: ReadonlyArray<AlertSend & { readonly id: string; readonly projectId: string }>) {
  if (sends.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const rows = JSON.stringify(sends.map((send) => ({
    id: send.id, project_id: send.projectId, channel: send.channel, sent_at: send.sentAt.toISOString(),
    dead_letters: send.deadLetters, circuit_openings: send.circuitOpenings, test: send.test, error: send.error
  })))
  yield* sql`INSERT INTO alert_sends (id, project_id, channel, sent_at, dead_letters, circuit_openings, test, error)
    SELECT id, project_id, channel, sent_at, dead_letters, circuit_openings, test, error
    FROM jsonb_to_recordset(${rows}::jsonb) AS x(id uuid, project_id uuid, channel text, sent_at timestamptz,
      dead_letters int, circuit_openings int, test boolean, error text)`
})

export interface DueAlert extends StoredAlert {
  readonly projectId: string
  readonly projectName: string
  readonly total: number
  /** The oldest dead letters of the message, oldest first. */
  readonly listed: ReadonlyArray<DeadLetterNote>
  /** Circuits of origins opened (outbox rows of kind circuit_open), and the oldest of them. */
  readonly circuitOpenings: number
  readonly openings: ReadonlyArray<CircuitOpeningNote>
}

/**
 * Takes the dead letters of up to `limit` projects whose alert may send now: their outbox rows are
 * deleted and their next message is held back for `groupMs`, in one transaction; the messages are
 * the caller's to send once it committed (at most once: a node dying in between loses them).
 */
export const alertsTakeDue = Effect.fnUntraced(function*(input: {
  readonly nowMs: number
  readonly groupMs: number
  readonly listed: number
  readonly limit: number
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  return yield* sql.withTransaction(Effect.gen(function*() {
    const due = yield* sql<{ project_id: string; name: string; webhook_url: string | null; email_recipients: Array<string> }>`
      SELECT a.project_id, p.name, a.webhook_url, a.email_recipients FROM project_alerts a JOIN projects p ON p.id = a.project_id
      WHERE a.next_send_at <= ${now} AND EXISTS (SELECT FROM alert_outbox o WHERE o.project_id = a.project_id)
      ORDER BY a.next_send_at LIMIT ${input.limit} FOR UPDATE OF a SKIP LOCKED`
    if (due.length === 0) return []
    const ids = due.map((row) => row.project_id)
    type Note = { trigger_id: string; url: string; error: string | null; failed_at: string }
    const taken = yield* sql<{ project_id: string; total: number; listed: Array<Note> | null; openings: number; opened: Array<Note> | null }>`
      WITH taken AS (DELETE FROM alert_outbox WHERE project_id = ANY(${ids}::uuid[]) RETURNING *)
      SELECT project_id, (count(*) FILTER (WHERE kind = 'dead_letter'))::int AS total,
        (array_agg(json_build_object('trigger_id', trigger_id, 'url', url, 'error', error, 'failed_at', failed_at)
          ORDER BY failed_at, execution_id) FILTER (WHERE kind = 'dead_letter'))[1:${input.listed}] AS listed,
        (count(*) FILTER (WHERE kind = 'circuit_open'))::int AS openings,
        (array_agg(json_build_object('trigger_id', trigger_id, 'url', url, 'error', error, 'failed_at', failed_at)
          ORDER BY failed_at, execution_id) FILTER (WHERE kind = 'circuit_open'))[1:${input.listed}] AS opened
      FROM taken GROUP BY project_id`
    yield* sql`UPDATE project_alerts SET next_send_at = ${new Date(input.nowMs + input.groupMs)} WHERE project_id = ANY(${ids}::uuid[])`
    return due.flatMap((row): Array<DueAlert> => {
      const batch = taken.find((entry) => entry.project_id === row.project_id)
      if (batch === undefined) return []
      return [{
        projectId: row.project_id,
        projectName: row.name,
        webhookUrl: row.webhook_url,
        emailRecipients: row.email_recipients,
        total: batch.total,
        listed: (batch.listed ?? []).map((note) => ({ triggerId: note.trigger_id, url: note.url, error: note.error, failedAt: new Date(note.failed_at) })),
        circuitOpenings: batch.openings,
        openings: (batch.opened ?? []).map((note) => ({ origin: note.url, error: note.error, openedAt: new Date(note.failed_at) }))
      }]
    })
  }))
})

/** Drops outbox rows of projects that no longer have an alert target, and old message records. */
export const alertsPurge = Effect.fnUntraced(function*(input: { readonly sendsBeforeMs: number }) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM alert_outbox o WHERE NOT EXISTS (SELECT FROM project_alerts a WHERE a.project_id = o.project_id
    AND (a.webhook_url IS NOT NULL OR cardinality(a.email_recipients) > 0))`
  yield* sql`DELETE FROM alert_sends WHERE sent_at < ${new Date(input.sendsBeforeMs)}`
})
