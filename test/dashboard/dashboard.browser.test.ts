// The dashboard in a real browser (docs/dashboard.md): headless Chromium (Debian's, driven by playwright-core)
// against the real service with a local webhook recorder and a local SMTP server. A person's path:
// wrong password refused, sign in, create a key and use it with /schedule, see the trigger delivered
// with its response body, replay it, cancel another, create a tag policy (and see a validation
// message, and a hold of its tag), a target policy with an open circuit on the Targets page and the
// trigger waiting for its origin saying so, set alerts and send a test alert, dead-letter a trigger and see the alert arrive by
// webhook and e-mail, the overview, the retry policy; a cross-origin POST with the browser's cookie
// refused; an expired session sent back to sign-in; sign out. Also: a trigger's outcome beside
// its status (a dead letter is `completed` too) and the list filtered by it, rows as links (a new
// tab, the keyboard), a retry policy in words, every overview chart on the chosen range, an alert
// test whose e-mail failed while its webhook arrived shown as partly failed, the API reference opened
// from the sidebar with the session, and every page photographed at 1,280 and 420 px into
// .tmp/screenshots/, failing when one is wider than the screen.
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createAdmin } from "../../src/commands/admins.ts"
import { createProject } from "../../src/commands/projects.ts"
import { execFileSync } from "node:child_process"
import { REPO_ROOT } from "../support/cli.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"
import { browserSession, layout, screenshot, step } from "../support/browser.ts"
import { type Mailbox, mailbox, mailText } from "../support/mailbox.ts"

class Mail extends Context.Service<Mail, Mailbox>()("test/Mail") {}

const Env = Layer.unwrap(Effect.gen(function*() {
  // the pages' bundle, as npm start builds it (under the build's lock: other test files build too)
  yield* Effect.sync(() => execFileSync("npm", ["run", "--silent", "build"], { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "inherit"] }))
  const mail = yield* mailbox
  return Layer.merge(testServerLayer({ SMTP_URL: mail.url }), Layer.succeed(Mail)(mail))
}))

const EMAIL = "ada@example.com"
const PASSWORD = "lovelace-1843"

layer(Env, { timeout: "240 seconds", excludeTestServices: true })("dashboard in Chromium", (it) => {
  it.effect("a person's path through every page", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer
      const mail = yield* Mail
      const sql = yield* SqlClient.SqlClient
      const hooks = yield* target
      hooks.reply("/fail", { status: 500 })
      yield* createAdmin(EMAIL, PASSWORD).pipe(Effect.orDie)
      const projectId = yield* createProject("shop", undefined).pipe(Effect.orDie)
      yield* createProject("internal-tools", undefined).pipe(Effect.orDie)
      const { page, context } = yield* browserSession
      const base = server.baseUrl
      const go = (section: string) => step(() => page.goto(`${base}/dashboard/p/${projectId}/${section}`))

      // sign-in: a wrong password is refused with the API's message
      yield* step(() => page.goto(`${base}/dashboard`))
      yield* step(() => page.waitForURL(/\/dashboard\/sign-in/))
      yield* step(() => page.getByText("npm run --silent cli -- admin create you@example.com").waitFor())
      yield* layout(page, "01-sign-in")
      yield* step(() => page.getByLabel("E-mail").fill(EMAIL))
      yield* step(() => page.getByLabel("Password").fill("not the password"))
      yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* step(() => page.getByText("Wrong e-mail or password").waitFor())
      yield* layout(page, "02-sign-in-refused")
      yield* step(() => page.getByLabel("Password").fill(PASSWORD))
      yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* step(() => page.getByRole("heading", { name: "Overview" }).waitFor())
      const cookies = yield* step(() => context.cookies())
      const session = cookies.find((c) => c.name === "__Host-timewheel-session")!
      assert.deepStrictEqual([session.httpOnly, session.secure, session.sameSite], [true, true, "Strict"])
      yield* step(() => page.getByLabel("Project").selectOption({ label: "shop" }))
      yield* step(() => page.waitForURL(new RegExp(`/dashboard/p/${projectId}/overview`)))
      // nothing delivered yet: every chart says so rather than drawing an empty frame
      yield* step(() => page.locator(".chart-empty", { hasText: "No delivery in this range" }).waitFor())
      assert.strictEqual(yield* step(() => page.locator("figure.chart[data-empty=\"true\"] .chart-empty").count()),
        yield* step(() => page.locator("figure.chart").count()))
      yield* layout(page, "02b-overview-no-data")

      // keys: create one, its clear key shown once; use it with /schedule
      yield* go("keys")
      yield* step(() => page.getByLabel("Label of the new key").fill("checkout service"))
      yield* step(() => page.getByRole("button", { name: "Create key" }).click())
      const key = (yield* step(() => page.locator("code.clear-key").textContent()))!
      assert.match(key, /^ttr_[0-9a-f]{48}$/)
      // the label is listed beside the key's hint
      yield* step(() => page.locator(`tr[data-key="ttr_…${key.slice(-4)}"] td.key-label`, { hasText: "checkout service" }).waitFor())
      yield* layout(page, "03-keys-created")
      const schedule = (headers: Record<string, string>, body?: string) =>
        Effect.map(server.call("POST", "/schedule", { headers: { "ttr-api-key": key, "content-type": "application/json", ...headers }, ...(body === undefined ? {} : { body }) }), (r) => {
          assert.strictEqual(r.status, 200, r.text)
          return r.json().triggerId as string
        })
      const delivered = yield* schedule({ "ttr-url": `${hooks.origin}/ok`, "ttr-scheduled-at": "now", "ttr-title": "Order 42 shipped", "ttr-tags": "orders" }, `{"order":42}`)
      const later = yield* schedule({
        "ttr-url": `${hooks.origin}/later`, "ttr-scheduled-at": "now | add 1h", "ttr-custom-key": "reminder-7",
        "ttr-retry-strategy": "exponential", "ttr-retry-max-attempts": "5", "ttr-retry-max-delay": "600", "ttr-retry-on": "non_2xx"
      })
      yield* pollUntil("the delivery", Effect.sync(() => (hooks.at("/ok").length > 0 ? true : undefined)))

      // triggers list, then the delivered trigger with its response body; replay it
      yield* go("triggers")
      yield* step(() => page.locator(`tr[data-trigger="${delivered}"]`).waitFor())
      yield* step(() => page.locator(`tr[data-trigger="${later}"]`).waitFor())
      yield* step(() => page.locator(`tr[data-trigger="${delivered}"] [data-outcome="delivered"]`, { hasText: "delivered" }).waitFor())
      yield* layout(page, "04-triggers")
      // on a phone: the top bar is one short line, its pages unfold under the menu button, none cut;
      // each trigger is a block of labelled lines, its status and attempts on the screen
      yield* step(() => page.setViewportSize({ width: 420, height: 900 }))
      const bar = (yield* step(() => page.locator("aside.sidebar").boundingBox()))!
      assert.isAtMost(bar.height, 64, `the top bar is ${bar.height} px high`)
      assert.isFalse(yield* step(() => page.locator("#pages-menu a", { hasText: "Dead letters" }).isVisible()))
      yield* step(() => page.getByRole("button", { name: /Triggers/ }).click())
      yield* screenshot(page, "04b-phone-menu-open")
      for (const name of ["Overview", "Triggers", "Dead letters", "Tag policies", "Targets", "Retry policy", "API keys", "Alerts", "API reference"]) {
        const box = (yield* step(() => page.locator("#pages-menu a", { hasText: name }).first().boundingBox()))!
        assert.isAtMost(box.x + box.width, 420, `${name} reaches ${box.x + box.width} px`)
      }
      for (const label of ["Status", "Attempts", "Scheduled (UTC)"]) {
        const cell = (yield* step(() => page.locator(`tr[data-trigger="${delivered}"] td[data-label="${label}"]`).boundingBox()))!
        assert.isAtMost(cell.x + cell.width, 420, `${label} reaches ${cell.x + cell.width} px`)
      }
      yield* step(() => page.locator("#pages-menu a", { hasText: "Dead letters" }).click())
      yield* step(() => page.getByRole("heading", { name: "Dead letters" }).waitFor())
      assert.isFalse(yield* step(() => page.locator("#pages-menu a", { hasText: "Alerts" }).isVisible()))
      yield* step(() => page.setViewportSize({ width: 1280, height: 900 }))
      yield* go("triggers")
      yield* step(() => page.locator(`tr[data-trigger="${delivered}"]`).waitFor())
      // the title is a link: it opens in a new tab, and from the keyboard
      const link = page.getByRole("link", { name: "Order 42 shipped" })
      assert.strictEqual(yield* step(() => link.getAttribute("href")), `/dashboard/p/${projectId}/triggers/${delivered}`)
      yield* step(() => link.focus())
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.locator(".page-header .badge", { hasText: "completed" }).waitFor())
      yield* step(() => page.locator(".page-header .badge", { hasText: "delivered" }).waitFor())
      yield* step(() => page.locator(".response-body", { hasText: "status 200" }).waitFor())
      yield* step(() => page.getByText(`{"order":42}`).waitFor())
      yield* layout(page, "05-trigger-delivered")
      // a replay asks first, naming where it goes
      const asked = new Promise<string>((resolve) => page.once("dialog", (dialog) => {
        resolve(dialog.message())
        void dialog.accept()
      }))
      yield* step(() => page.getByRole("button", { name: "Replay" }).click())
      assert.strictEqual(yield* step(() => asked), `Replay this trigger? Attempt 2 is sent to ${hooks.origin}/ok.`)
      yield* step(() => page.getByText("Replay queued").waitFor())
      yield* step(() => page.locator(`details[data-attempt="2"]`).waitFor())
      yield* pollUntil("the replay", Effect.sync(() => (hooks.at("/ok").length === 2 ? true : undefined)))
      yield* layout(page, "06-trigger-replayed")

      // cancel the other one; its buttons then follow the API's rules
      page.once("dialog", (dialog) => void dialog.accept())
      yield* step(() => page.goto(`${base}/dashboard/p/${projectId}/triggers/${later}`))
      // its own retry policy reads as words, not JSON running out of its card
      const policyCell = page.locator("td.retry-policy")
      yield* step(() => policyCell.getByText("exponential, at most 5 attempts").waitFor())
      for (const line of ["first retry after 30 s, then doubling", "delays at most 600 s", "retries on non 2xx"]) {
        yield* step(() => policyCell.getByText(line).waitFor())
      }
      assert.notInclude(yield* step(() => policyCell.textContent()), "{")
      yield* step(() => page.getByRole("button", { name: "Cancel" }).click())
      yield* step(() => page.getByText("Cancelled.").waitFor())
      yield* step(() => page.locator(".page-header .badge", { hasText: "cancelled" }).waitFor())
      assert.isTrue(yield* step(() => page.getByRole("button", { name: "Cancel" }).isDisabled()))
      yield* layout(page, "07-trigger-cancelled")
      // the same rules and message as DELETE /cancel when asked anyway
      const again = yield* step(() => page.evaluate(async ([id, project]) => {
        const response = await fetch(`/jobs/${id}/cancel`, { method: "POST", headers: { "timewheel-project": project! } })
        return [response.status, await response.text()] as const
      }, [later, projectId]))
      assert.deepStrictEqual(again, [410, `{"_tag":"Gone","message":"Job is no longer cancellable (status=cancelled)"}`])

      // tag policies: a validation message, then a policy created with its live counts
      yield* go("tag-policies")
      yield* step(() => page.getByLabel("Tag", { exact: true }).fill("Bad Tag"))
      yield* step(() => page.getByLabel("Max concurrent").fill("2"))
      yield* step(() => page.getByRole("button", { name: "Create policy" }).click())
      yield* step(() => page.getByText("Invalid tag (only a-z 0-9 _ - allowed, max 50 chars)").waitFor())
      yield* step(() => page.getByLabel("Tag", { exact: true }).fill("orders"))
      yield* step(() => page.getByLabel("Throughput").fill("10/1s, 500/1h"))
      yield* step(() => page.getByRole("button", { name: "Create policy" }).click())
      yield* step(() => page.locator(`tr[data-policy="orders"]`).waitFor())
      assert.include(yield* step(() => page.locator(`tr[data-policy="orders"]`).textContent()), "10/1s, 500/1h")
      // a hold after a refusal of the target shows on the tag's row (within the page's 5 s refresh)
      yield* sql`INSERT INTO gate_holds (project_id, tag, held_since, held_until)
        VALUES (${projectId}, 'orders', now(), now() + interval '10 minutes')`
      yield* step(() => page.locator(`tr[data-policy="orders"] .badge`, { hasText: "held until" }).waitFor({ timeout: 10_000 }))
      yield* layout(page, "08-tag-policies")

      // targets: a validation message, a policy for an origin (paused), its queued trigger, an open circuit
      // with when and why, and the trigger's page saying it waits for its origin
      const downstream = "http://127.0.0.1:9"
      yield* go("targets")
      yield* step(() => page.getByLabel("Origin").fill("https://api.example.com/v1"))
      yield* step(() => page.getByLabel("Max concurrent").fill("10"))
      yield* step(() => page.getByRole("button", { name: "Create policy" }).click())
      yield* step(() => page.getByText("Invalid origin: https://api.example.com/v1").waitFor())
      yield* step(() => page.getByLabel("Origin").fill(downstream))
      yield* step(() => page.getByLabel("Throughput").fill("0/1s"))
      yield* step(() => page.getByLabel("Open after failures").fill("5"))
      yield* step(() => page.getByLabel("Cooldown (s)").fill("60"))
      yield* step(() => page.getByRole("button", { name: "Create policy" }).click())
      yield* step(() => page.locator(`tr[data-policy="${downstream}"]`, { hasText: "open after 5 failures, 60 s" }).waitFor())
      const waiting = yield* schedule({ "ttr-url": `${downstream}/hook`, "ttr-scheduled-at": "now" })
      yield* sql`INSERT INTO target_circuits (project_id, origin, opened_at, reason, open_until, cooldown_ms)
        VALUES (${projectId}, ${downstream}, now(), 'HTTP 502', now() + interval '10 minutes', 600000)`
      const row = page.locator(`tr[data-origin="${downstream}"]`)
      yield* step(() => row.locator(".badge", { hasText: "open" }).waitFor({ timeout: 10_000 }))
      yield* step(() => row.getByText("HTTP 502").waitFor())
      yield* layout(page, "08b-targets")
      yield* step(() => page.goto(`${base}/dashboard/p/${projectId}/triggers/${waiting}`))
      yield* step(() => page.locator(".origin-wait", { hasText: `Waiting for its origin ${downstream}: its circuit opened at` }).waitFor({ timeout: 10_000 }))
      yield* layout(page, "08c-trigger-waits-for-its-origin")

      // alerts: webhook and e-mail, a test alert reaching both
      yield* go("alerts")
      yield* step(() => page.getByLabel(/Chat webhook URL/).fill(`${hooks.origin}/chat`))
      yield* step(() => page.getByLabel(/E-mail recipients/).fill("ops@example.com\noncall@example.com"))
      yield* step(() => page.getByRole("button", { name: "Save" }).click())
      yield* step(() => page.getByText("Saved.").waitFor())
      yield* step(() => page.getByRole("button", { name: "Send a test alert" }).click())
      yield* step(() => page.getByText("webhook sent").waitFor())
      yield* step(() => page.getByText("email sent").waitFor())
      assert.match(JSON.parse(hooks.at("/chat")[0]!.body.toString()).text, /test alert for project shop/)
      assert.include(mailText(mail.mails[0]!), "test alert for project shop")
      assert.strictEqual(yield* step(() => page.locator(".notice.ok", { hasText: "Test alert" }).count()), 1)
      // the webhook arrives, the e-mail is refused: partly failed, each target with its own result
      yield* step(() => page.getByLabel(/E-mail recipients/).fill("bounce@example.com"))
      yield* step(() => page.getByRole("button", { name: "Save" }).click())
      yield* step(() => page.getByText("Saved.").waitFor())
      yield* step(() => page.getByRole("button", { name: "Send a test alert" }).click())
      const partly = page.locator(".notice.warn", { hasText: "Test alert" })
      yield* step(() => partly.waitFor())
      yield* step(() => partly.locator(`[data-channel="webhook"] .badge.green`, { hasText: "sent" }).waitFor())
      yield* step(() => partly.locator(`[data-channel="email"] .badge.red`, { hasText: "failed" }).waitFor())
      yield* layout(page, "09-alerts-partly-failed")
      yield* step(() => page.getByLabel(/E-mail recipients/).fill("ops@example.com\noncall@example.com"))
      yield* step(() => page.getByRole("button", { name: "Save" }).click())
      yield* step(() => page.getByText("Saved.").waitFor())

      // a dead letter: the alert arrives at the webhook recorder and the SMTP server
      const failing = yield* schedule({ "ttr-url": `${hooks.origin}/fail`, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none" })
      yield* pollUntil("the dead letter's alert", Effect.sync(() => (hooks.at("/chat").length === 3 && mail.mails.length === 2 ? true : undefined)), { deadlineMs: 20_000 })
      const alert = JSON.parse(hooks.at("/chat")[2]!.body.toString()).text as string
      assert.match(alert, /^\[timewheel\] 1 dead letter in project shop/)
      assert.include(alert, `trigger ${failing} → ${hooks.origin}/fail (HTTP 500)`)
      assert.deepStrictEqual(mail.mails[1]!.to, ["ops@example.com", "oncall@example.com"])
      assert.include(mailText(mail.mails[1]!), "1 dead letter in project shop")
      yield* step(() => page.reload())
      yield* step(() => page.getByText("1 dead letter", { exact: true }).first().waitFor())
      yield* layout(page, "10-alerts")
      yield* go("dead-letters")
      yield* step(() => page.locator(`tr[data-dead-letter="${failing}"]`).waitFor())
      yield* layout(page, "11-dead-letters")

      // the dead letter's trigger says so beside its status, and the list filters by outcome
      yield* go("triggers")
      yield* step(() => page.locator(`tr[data-trigger="${failing}"] [data-outcome="dead_letter"]`, { hasText: "dead letter" }).waitFor())
      yield* step(() => page.getByLabel("Outcome").selectOption({ label: "dead letter" }))
      yield* step(() => page.getByRole("button", { name: "Apply" }).click())
      yield* step(() => page.locator(`tr[data-trigger="${delivered}"]`).waitFor({ state: "detached" }))
      assert.deepStrictEqual(yield* step(() => page.locator("tr[data-trigger]").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-trigger")))), [failing])
      yield* layout(page, "12-triggers-dead-letters")
      yield* step(() => page.getByRole("link", { name: `POST ${hooks.origin}/fail` }).click())
      yield* step(() => page.locator(".page-header .badge", { hasText: "dead letter" }).waitFor())
      yield* layout(page, "13-trigger-dead-letter")

      // overview: the rollup's charts, every one (a tag's too) on the chosen range
      yield* sql`INSERT INTO tag_policy_samples (project_id, tag, minute, queued, in_flight)
        VALUES (${projectId}, 'orders', date_trunc('minute', now()), 4, 1) ON CONFLICT (project_id, minute, tag) DO UPDATE SET queued = 4, in_flight = 1`
      yield* go("overview")
      yield* step(() => page.locator(".stat", { hasText: "triggers ending in a dead letter now" }).locator(".value", { hasText: "1" }).waitFor())
      yield* step(() => page.locator(".chart canvas").first().waitFor())
      const ranges = () => step(() => page.locator("figure.chart[data-x-min]").evaluateAll((figures) =>
        figures.filter((figure) => !figure.textContent!.startsWith("Dead-letter attempts per hour"))
          .map((figure) => [figure.querySelector("figcaption")!.textContent, Number(figure.getAttribute("data-x-min")), Number(figure.getAttribute("data-x-max"))] as const)))
      for (const [hours, caption] of [[1, "Tag orders: queued and in flight (peak per minute, sampled every 5 s)"], [24, "Tag orders: queued and in flight (peak per 15 minutes, sampled every 5 s)"]] as const) {
        yield* step(() => page.getByRole("button", { name: `${hours} h` }).click())
        yield* step(() => page.locator("figcaption", { hasText: caption }).waitFor())
        yield* pollUntil(`the charts of ${hours} h`, Effect.map(ranges(), (charts) => {
          const spans = new Set(charts.map(([, min, max]) => `${min}-${max}`))
          return charts.length === 4 && spans.size === 1 && charts[0]![2] - charts[0]![1] >= hours * 3600 ? charts : undefined
        }))
        yield* layout(page, `14-overview-${hours}h`)
      }
      // the range is in the address: a reload keeps it
      assert.match(page.url(), /\/overview\?hours=24$/)
      yield* step(() => page.reload())
      yield* step(() => page.locator("figcaption", { hasText: "Tag orders: queued and in flight (peak per 15 minutes, sampled every 5 s)" }).waitFor())
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "24 h" }).getAttribute("aria-pressed")), "true")

      // retry policy
      yield* go("retry-policy")
      yield* step(() => page.getByLabel(/Max attempts/).fill("5"))
      yield* step(() => page.getByRole("button", { name: "Save" }).click())
      yield* step(() => page.getByText("Saved.").waitFor())
      const policy = yield* server.call("GET", "/project/retry-policy", { headers: { "ttr-api-key": key } })
      assert.strictEqual(policy.json().retryMaxAttempts, 5)
      yield* layout(page, "15-retry-policy")
      yield* go("keys")
      yield* step(() => page.locator("tr[data-key]").first().waitFor())
      yield* layout(page, "16-keys")

      // the page reads the hint of an empty 400 (same origin: nothing to expose through CORS)
      const hint = yield* step(() => page.evaluate(async (project) => {
        const response = await fetch("/declare", { method: "POST", headers: { "content-type": "application/json", "timewheel-project": project }, body: "{" })
        return [response.status, await response.text(), response.headers.get("timewheel-error")] as const
      }, projectId))
      assert.deepStrictEqual([hint[0], hint[1]], [400, ""])
      assert.match(hint[2]!, /^body is not valid JSON: /)

      // the API reference, from the sidebar, with the session alone
      const failedLoads: Array<string> = []
      const onResponse = (response: { status(): number; url(): string }) => void (response.status() >= 400 && failedLoads.push(`${response.status()} ${response.url()}`))
      page.on("response", onResponse)
      yield* step(() => page.getByRole("link", { name: "API reference" }).click())
      yield* step(() => page.waitForURL(`${base}/docs`))
      yield* step(() => page.getByText("/schedule", { exact: false }).first().waitFor())
      yield* step(() => page.waitForLoadState("load"))
      yield* step(() => page.waitForTimeout(1_000))
      page.off("response", onResponse)
      // nothing the page asks for is refused (no /favicon.ico 404)
      assert.deepStrictEqual(failedLoads, [])
      yield* screenshot(page, "17-api-reference")
      yield* go("keys")
      yield* step(() => page.locator("tr[data-key]").first().waitFor())

      // a cross-origin POST carrying the browser's own cookie is refused, and creates nothing
      const keysBefore = (yield* step(() => page.locator("tr[data-key]").count()))
      const cross = yield* step(() => context.request.post(`${base}/keys`, { headers: { origin: "https://evil.example", "timewheel-project": projectId } }))
      assert.strictEqual(cross.status(), 403)
      assert.deepStrictEqual(yield* step(() => cross.json()), { _tag: "Forbidden", message: "Cross-origin request refused" })
      // and /keys refuses an API key in either header
      for (const headers of [{ "ttr-api-key": key }, { authorization: `Bearer ${key}` }]) {
        assert.strictEqual((yield* server.call("GET", "/keys", { headers })).status, 401)
        assert.strictEqual((yield* server.call("GET", "/alerts", { headers })).status, 401)
      }
      yield* step(() => page.reload())
      yield* step(() => page.locator("tr[data-key]").first().waitFor())
      assert.strictEqual(yield* step(() => page.locator("tr[data-key]").count()), keysBefore)

      // an expired session: the next call sends the person back to sign-in
      yield* sql`UPDATE admin_sessions SET expires_at = now() - interval '1 second'`
      yield* go("triggers")
      yield* step(() => page.waitForURL(/\/dashboard\/sign-in\?next=/))
      yield* step(() => page.getByText("Your session has ended: sign in again.").waitFor())
      yield* layout(page, "18-session-expired")
      yield* step(() => page.getByLabel("E-mail").fill(EMAIL))
      yield* step(() => page.getByLabel("Password").fill(PASSWORD))
      yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* step(() => page.getByRole("heading", { name: "Triggers" }).waitFor())

      // sign out: back to sign-in, and the session is gone on the server
      yield* step(() => page.getByRole("button", { name: "Sign out" }).click())
      yield* step(() => page.waitForURL(/\/dashboard\/sign-in/))
      const after = yield* step(() => context.request.get(`${base}/session`))
      assert.strictEqual(after.status(), 401)
      yield* layout(page, "19-signed-out")
    })), 180_000)
})
