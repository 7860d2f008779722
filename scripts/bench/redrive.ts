// The redrive workload (timewheel only; docs/bulk-actions.md): n dead letters (completed triggers whose
// one execution was a dead letter, written straight into the database: how they died is not measured)
// redriven by one bulk action, `POST /actions {"action":"replay","filter":{"deadLetter":true}}`, while
// the lock probe (lockProbe.ts) measures how long a claim of one of those rows waits behind the
// action's chunks: the figure to set beside the batch workload's "longest claim wait" behind a /bulk of
// 10,000. Reported: the POST (it fixes the set), the action from POST to `completed` (GET /actions/{id}
// every 100 ms), its rate, and the time until every replay reached the sink.
import { PgClient } from "@effect/sql-pg"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Agent, request } from "undici"
import { nowMs, sleep } from "./common.ts"
import { withLockProbe } from "./lockProbe.ts"
import type { Sink } from "./sink.ts"
import type { Contender, StartedSystem } from "./system.ts"
import { newRun, round, withSystem } from "./workloads.ts"

export const REDRIVE_DEFAULT_N = 100_000

export interface RedriveMetrics {
  readonly n: number
  readonly matched: number
  readonly replayed: number
  /** POST /actions: the set fixed (its items written), the answer back. */
  readonly startMs: number
  /** From the POST to the action read as completed. */
  readonly actionMs: number
  /** Triggers processed per second over the action. */
  readonly ratePerS: number
  /** From the POST to the last replay's arrival at the sink. */
  readonly lastArrivalMs: number
  /** The longest wait of a claim-like lock of a row of the set while the action ran, and how many were taken. */
  readonly lockWaitMs: number
  readonly probes: number
  readonly missing: number
  readonly duplicates: number
  readonly peakRssMiB: number
}

/** Writes n dead letters of the bench project (two statements), each aimed at its id at the sink; their ids. */
const insertDeadLetters = (databaseUrl: string, n: number, urlOf: (i: number) => string) => {
  const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))
  const prefix = urlOf(0).slice(0, -1) // the sink's URL ends with the id
  return runtime.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const shards = Number((yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'shards'`)[0]!.value)
    const rows = yield* sql<{ id: string }>`
      INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, url, method, headers, tags, attempts, created_at, updated_at)
      SELECT x.id, p.id, 'job', ('x' || right(x.id::text, 8))::bit(32)::bigint % ${shards}, 'completed', now(),
        ${prefix} || x.i, 'POST', '[]'::jsonb, '{}', 1, now(), now()
      FROM projects p, (SELECT i, gen_random_uuid() AS id FROM generate_series(0, ${n - 1}) AS i) x
      WHERE p.name = 'bench'
      RETURNING id`
    yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms,
        http_status, is_dead_letter, connect_timeout_seconds, timeout_seconds, url)
      SELECT gen_random_uuid(), t.id, t.project_id, 1, 'failed', now(), now(), 5, 503, true, 10, 300, t.url
      FROM triggers t JOIN projects p ON p.id = t.project_id WHERE p.name = 'bench'`
    return rows.map((row) => row.id)
  })).finally(() => runtime.dispose())
}

/** The API of the started service, called as a client would. */
const client = (system: StartedSystem) => {
  const endpoint = system.endpoint!
  const agent = new Agent({ connect: { rejectUnauthorized: false } })
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await request(`${endpoint.origin}${path}`, {
      method,
      dispatcher: agent,
      headers: { [`${endpoint.headerPrefix}-api-key`]: endpoint.apiKey, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: 300_000,
      bodyTimeout: 300_000
    })
    const text = await response.body.text()
    if (response.statusCode >= 300) throw new Error(`${method} ${path} answered ${response.statusCode}: ${text.slice(0, 200)}`)
    return JSON.parse(text) as { id: string; status: string; matched: number; processed: number; replayed: number }
  }
  return { call, close: () => agent.close() }
}

export const runRedrive = async (contender: Contender, databaseUrl: string, sink: Sink, n: number): Promise<RedriveMetrics> => {
  const run = newRun()
  const system = await contender.start(databaseUrl, true)
  const { result, peakRssMiB } = await withSystem(system, async () => {
    if (system.endpoint === undefined) throw new Error(`${contender.label} has no bulk actions`)
    const api = client(system)
    try {
      const ids = await insertDeadLetters(databaseUrl, n, (i) => sink.url(run, i))
      await sink.expect(run, n)
      const startedAt = nowMs()
      const probed = await withLockProbe(databaseUrl, ids, async () => {
        const started = await api.call("POST", "/actions", { action: "replay", filter: { deadLetter: true } })
        const startMs = nowMs() - startedAt
        let action = started
        while (action.status === "running") {
          await sleep(100)
          action = await api.call("GET", `/actions/${started.id}`)
        }
        return { action, startMs, actionMs: nowMs() - startedAt }
      })
      if (probed.result.action.status !== "completed") throw new Error(`the action ended ${probed.result.action.status}`)
      await sink.waitComplete(Date.now() + Math.max(120_000, n))
      const arrivals = await sink.collect()
      const arrived = arrivals.arrivals.filter((at) => !Number.isNaN(at))
      const last = arrived.reduce((latest, at) => Math.max(latest, at), Number.NEGATIVE_INFINITY)
      // the sink's instants and nowMs() are both wall-clock milliseconds
      return { probed, arrivals, arrived: arrived.length, lastArrivalMs: last - startedAt }
    } finally {
      await api.close()
    }
  })
  const { action, startMs, actionMs } = result.probed.result
  return {
    n,
    matched: action.matched,
    replayed: action.replayed,
    startMs: round(startMs),
    actionMs: round(actionMs),
    ratePerS: round(action.processed / (actionMs / 1000), 0),
    lastArrivalMs: round(result.lastArrivalMs),
    lockWaitMs: round(result.probed.maxWaitMs),
    probes: result.probed.probes,
    missing: n - result.arrived,
    duplicates: result.arrivals.duplicates,
    peakRssMiB
  }
}
