// Failure alerts and the overview's rollup on a real database (docs/dashboard.md), driven step by step
// under a TestClock: dead letters recorded in a burst give one message per target per minute (the
// webhook recorder gets `{"text"}`, the local SMTP server one mail), later ones wait for the next
// minute; a failing target is recorded and not retried; projects without an alert target queue nothing.
// The rollup: executions recorded in batches are counted per minute by outcome with first attempts'
// lateness percentiles, folded or not, and the tag policy samples.
import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { projectOverview } from "../../src/commands/overview.ts"
import { AppConfig, loadConfig } from "../../src/config.ts"
import { AlertSenders } from "../../src/delivery/alertSenders.ts"
import { sendDueAlerts } from "../../src/jobs/dashboardJobs.ts"
import { Notifications } from "../../src/store/notifications.ts"
import { statsFold } from "../../src/store/deliveryStats.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertExecution, insertTrigger, nextId } from "../support/fixtures.ts"
import { closedPort, target } from "../support/target.ts"
import { type Mailbox, mailbox, mailText } from "../support/mailbox.ts"

const T0 = Date.UTC(2031, 0, 1, 12, 0, 0)

/**
 * A clock set to a chosen time that only moves when told (the real one sleeps: the SQL client's own
 * timers must keep working, which a TestClock would stop).
 */
let nowMs = T0
const realClock = Effect.runSync(Clock.clockWith(Effect.succeed))
const steppedClock: Clock.Clock = {
  currentTimeMillisUnsafe: () => nowMs,
  currentTimeMillis: Effect.sync(() => nowMs),
  currentTimeNanosUnsafe: () => BigInt(nowMs) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(nowMs) * 1_000_000n),
  monotonicTimeNanosUnsafe: () => realClock.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: realClock.monotonicTimeNanos,
  sleep: (duration) => realClock.sleep(duration)
}
const TestClock = {
  setTime: (ms: number) => Effect.sync(() => void (nowMs = ms)),
  adjust: (duration: "30 seconds" | "31 seconds" | "2 minutes" | "5 minutes") =>
    Effect.sync(() => void (nowMs += { "30 seconds": 30_000, "31 seconds": 31_000, "2 minutes": 120_000, "5 minutes": 300_000 }[duration]))
}
/** Runs `effect` on the stepped clock. */
const stepped = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Clock.Clock, steppedClock)

const setup = Effect.gen(function*() {
  const mail = yield* mailbox
  const hooks = yield* target
  return { mail, hooks }
})

const projectWithAlert = (alert: { readonly webhookUrl: string | null; readonly emailRecipients: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const projectId = nextId()
    yield* ensureProject(projectId)
    yield* sql`INSERT INTO project_alerts (project_id, webhook_url, email_recipients, updated_at)
      VALUES (${projectId}, ${alert.webhookUrl}, ${[...alert.emailRecipients]}::text[], now())`
    return projectId
  })

/** A dead-lettered trigger of the project: one failed attempt marked as the last. */
const deadLetter = (projectId: string, url = "http://127.0.0.1:9/hook") =>
  Effect.gen(function*() {
    const triggerId = yield* insertTrigger({ projectId, status: "completed", url })
    yield* insertExecution({ projectId, triggerId, status: "failed", httpStatus: 500, isDeadLetter: true, url })
    return triggerId
  })

const sendsOf = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ channel: string; dead_letters: number; test: boolean; error: string | null }>`
      SELECT channel, dead_letters, test, error FROM alert_sends WHERE project_id = ${projectId} ORDER BY sent_at, channel`)

const dependencies = (smtpUrl: () => string) =>
  Layer.unwrap(Effect.sync(() => AlertSenders.layer.pipe(Layer.provideMerge(Layer.succeed(AppConfig)(loadConfig({ SMTP_URL: smtpUrl() }))))))

let smtp: Mailbox | undefined
const Env = Layer.mergeAll(TestDatabase, Notifications.memory)

layer(Env, { timeout: "60 seconds", excludeTestServices: true })("alerts", (it) => {
  it.effect("a burst of dead letters: one message per target now, the rest one minute later; failures recorded, never retried", () =>
    Effect.scoped(Effect.gen(function*() {
      const { mail, hooks } = yield* setup
      smtp = mail
      yield* TestClock.setTime(T0)
      const projectId = yield* projectWithAlert({ webhookUrl: `${hooks.origin}/chat`, emailRecipients: ["ops@example.com", "oncall@example.com"] })
      const first = yield* deadLetter(projectId, "http://target.example/one")
      yield* deadLetter(projectId)
      yield* deadLetter(projectId)
      yield* stepped(sendDueAlerts).pipe(Effect.provide(dependencies(() => smtp!.url)))
      assert.strictEqual(hooks.at("/chat").length, 1)
      const chat = JSON.parse(hooks.at("/chat")[0]!.body.toString("utf8"))
      assert.deepStrictEqual(Object.keys(chat), ["text"])
      assert.match(chat.text, /^\[timewheel\] 3 dead letters in project project-/)
      assert.include(chat.text, `trigger ${first} → http://target.example/one (HTTP 500)`)
      assert.strictEqual(mail.mails.length, 1)
      assert.deepStrictEqual(mail.mails[0]!.to, ["ops@example.com", "oncall@example.com"])
      assert.include(mailText(mail.mails[0]!), "3 dead letters in project")

      // two more within the minute: held back until it has passed, then one message for both
      yield* deadLetter(projectId)
      yield* deadLetter(projectId)
      yield* TestClock.adjust("30 seconds")
      yield* stepped(sendDueAlerts).pipe(Effect.provide(dependencies(() => smtp!.url)))
      assert.strictEqual(hooks.at("/chat").length, 1)
      yield* TestClock.adjust("31 seconds")
      yield* stepped(sendDueAlerts).pipe(Effect.provide(dependencies(() => smtp!.url)))
      assert.strictEqual(hooks.at("/chat").length, 2)
      assert.match(JSON.parse(hooks.at("/chat")[1]!.body.toString("utf8")).text, /^\[timewheel\] 2 dead letters/)
      assert.strictEqual(mail.mails.length, 2)
      // nothing left: nothing more is sent
      yield* TestClock.adjust("2 minutes")
      yield* stepped(sendDueAlerts).pipe(Effect.provide(dependencies(() => smtp!.url)))
      assert.strictEqual(hooks.at("/chat").length, 2)
      const sends = yield* sendsOf(projectId)
      assert.deepStrictEqual(sends.map((s) => [s.channel, s.dead_letters, s.error]), [
        ["email", 3, null], ["webhook", 3, null], ["email", 2, null], ["webhook", 2, null]
      ])
    })))

  it.effect("a failing target is recorded with its error and not tried again; the other target still gets the message", () =>
    Effect.scoped(Effect.gen(function*() {
      const { mail, hooks } = yield* setup
      smtp = mail
      yield* TestClock.setTime(T0 + 3_600_000)
      hooks.reply("/broken", { status: 500 })
      const refused = yield* closedPort
      const broken = yield* projectWithAlert({ webhookUrl: `${hooks.origin}/broken`, emailRecipients: ["ops@example.com"] })
      const unreachable = yield* projectWithAlert({ webhookUrl: `http://127.0.0.1:${refused}/hook`, emailRecipients: [] })
      yield* deadLetter(broken)
      yield* deadLetter(unreachable)
      yield* stepped(sendDueAlerts).pipe(Effect.provide(dependencies(() => smtp!.url)))
      assert.strictEqual(hooks.at("/broken").length, 1)
      assert.strictEqual(mail.mails.length, 1)
      assert.deepStrictEqual((yield* sendsOf(broken)).map((s) => [s.channel, s.error]), [["email", null], ["webhook", "HTTP 500: status 500"]])
      const [failure] = yield* sendsOf(unreachable)
      assert.match(failure!.error!, /ECONNREFUSED/)
      yield* TestClock.adjust("5 minutes")
      yield* stepped(sendDueAlerts).pipe(Effect.provide(dependencies(() => smtp!.url)))
      assert.strictEqual(hooks.at("/broken").length, 1)
      assert.strictEqual((yield* sendsOf(unreachable)).length, 1)
    })))

  it.effect("dead letters of a project without an alert target queue nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = nextId()
      yield* ensureProject(projectId)
      yield* deadLetter(projectId)
      const emptyTargets = yield* projectWithAlert({ webhookUrl: null, emailRecipients: [] })
      yield* deadLetter(emptyTargets)
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM alert_outbox WHERE project_id IN (${projectId}, ${emptyTargets})`
      assert.strictEqual(rows[0]!.n, 0)
    }))
})

describe("rollup", () => {
  layer(Env, { timeout: "60 seconds", excludeTestServices: true })("overview", (it) => {
    it.effect("counts per minute by outcome, first attempts' lateness p50/p99, dead letters of 24 h, folded or pending alike", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const projectId = nextId()
        yield* ensureProject(projectId)
        const minute = Math.floor(Date.now() / 60_000) * 60_000 - 5 * 60_000
        yield* TestClock.setTime(minute + 5 * 60_000 + 30_000)
        // 100 first attempts 10 ms late but one 2 s late, in one minute; a retry; a replay; a dead letter
        for (let i = 0; i < 100; i++) {
          const scheduledAt = new Date(minute + i * 100)
          const triggerId = yield* insertTrigger({ projectId, status: "completed", scheduledAt })
          yield* insertExecution({ projectId, triggerId, startedAt: new Date(scheduledAt.getTime() + (i === 99 ? 2_000 : 10)) })
        }
        const retried = yield* insertTrigger({ projectId, status: "completed", scheduledAt: new Date(minute + 60_000) })
        yield* insertExecution({ projectId, triggerId: retried, attempt: 1, status: "failed", httpStatus: 503, startedAt: new Date(minute + 60_000) })
        yield* insertExecution({ projectId, triggerId: retried, attempt: 2, startedAt: new Date(minute + 120_000) })
        yield* insertExecution({ projectId, triggerId: retried, attempt: 3, triggeredBy: "retry", status: "failed", isDeadLetter: true, startedAt: new Date(minute + 120_500) })
        // triggers held by their tag's concurrency limit: their wait is counted apart; a
        // tag whose policy only sets a timeout holds nothing back
        yield* sql`INSERT INTO tag_policies (id, project_id, tag, max_concurrent, created_at, updated_at)
          VALUES (${nextId()}, ${projectId}, 'gated', 1, now(), now())`
        yield* sql`INSERT INTO tag_policies (id, project_id, tag, request_timeout_seconds, created_at, updated_at)
          VALUES (${nextId()}, ${projectId}, 'timed', 30, now(), now())`
        for (const [tags, lateMs] of [[["gated", "x"], 5_000], [["gated"], 5_000], [["timed"], 10]] as const) {
          const scheduledAt = new Date(minute + 180_000)
          const triggerId = yield* insertTrigger({ projectId, status: "completed", scheduledAt, tags })
          yield* insertExecution({ projectId, triggerId, startedAt: new Date(scheduledAt.getTime() + lateMs) })
        }
        const before = yield* stepped(projectOverview(projectId, 1))
        yield* statsFold()
        const after = yield* stepped(projectOverview(projectId, 1))
        assert.deepStrictEqual(after, before) // pending or folded: the same answer
        const pending = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM delivery_minutes_pending WHERE project_id = ${projectId}`
        assert.strictEqual(pending[0]!.n, 0)
        const at = (t: number) => after.deliveries.t.indexOf(t / 1000)
        assert.strictEqual(after.deliveries.t.length, 60)
        assert.strictEqual(after.deliveries.succeeded[at(minute)], 100)
        assert.strictEqual(after.deliveries.failed[at(minute + 60_000)], 1)
        assert.strictEqual(after.deliveries.succeeded[at(minute + 120_000)], 1)
        assert.strictEqual(after.deliveries.deadLetters[at(minute + 120_000)], 1)
        const p50 = after.lateness.p50[at(minute)]!
        const p99 = after.lateness.p99[at(minute)]!
        assert.isTrue(p50 > 9 && p50 < 11.5, String(p50))
        assert.isTrue(p99 > 9 && p99 < 11.5, String(p99)) // 99 of 100 were 10 ms late
        assert.isNull(after.lateness.p50[at(minute + 120_000)]) // a retry and a replay carry no lateness
        assert.strictEqual(after.lateness.p99[at(minute + 60_000)], 0) // a retried first attempt: started at its time
        const gatedP50 = after.lateness.gatedP50[at(minute + 180_000)]!
        assert.isTrue(gatedP50 > 4_500 && gatedP50 < 5_500, String(gatedP50))
        assert.isTrue(after.lateness.p99[at(minute + 180_000)]! < 11.5, "the scheduler's own lateness leaves the gated wait out")
        assert.isNull(after.lateness.gatedP50[at(minute)])
        assert.deepStrictEqual(after.totals, {
          succeeded: 104, failed: 1, deadLetters: 1, latenessP50: after.totals.latenessP50, latenessP99: after.totals.latenessP99,
          gatedLatenessP50: gatedP50, gatedLatenessP99: gatedP50
        })
        assert.isTrue(after.totals.latenessP99! < 11.5, String(after.totals.latenessP99))
        assert.strictEqual(after.deadLetters24h, 1)
      }))
  })
})
