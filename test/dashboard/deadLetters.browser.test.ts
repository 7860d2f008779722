// The Dead letters page in a real browser (headless Chromium driven by playwright-core, the real
// service, a local target). Five triggers become dead letters through real deliveries (a 500, no
// retry); two of them are redriven to a working URL and delivered. The page then lists the three
// that end in a dead letter now — title, last error, attempt count — and not the two delivered
// since; one whose replay is under way shows so, without a Replay button. Its count and the
// overview's agree and say what they count. A Replay asks first: going back sends nothing, and
// confirming sends the trigger once more. Photographed at 1,280 and 420 px (.tmp/screenshots/).
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { execFileSync } from "node:child_process"
import { createAdmin } from "../../src/commands/admins.ts"
import { createProject } from "../../src/commands/projects.ts"
import { REPO_ROOT } from "../support/cli.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"
import { browserSession, layout, step } from "../support/browser.ts"
import { sessionCall, signedIn } from "../support/dashboard.ts"

const Env = Layer.unwrap(Effect.sync(() => {
  // the pages' bundle, as npm start builds it
  execFileSync("npm", ["run", "--silent", "build"], { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "inherit"] })
  return testServerLayer()
}))

const EMAIL = "dorothy@example.com"
const PASSWORD = "hodgkin-1964"

layer(Env, { timeout: "240 seconds", excludeTestServices: true })("the Dead letters page in Chromium", (it) => {
  it.effect("lists the triggers that end in a dead letter now, counts them as the overview does, and confirms every replay", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      const hooks = yield* target
      hooks.reply("/fail", { status: 500 })
      yield* createAdmin(EMAIL, PASSWORD).pipe(Effect.orDie)
      const projectId = yield* createProject("letters", undefined).pipe(Effect.orDie)
      const token = yield* signedIn(EMAIL, PASSWORD)
      const created = yield* sessionCall(token, "POST", "/keys", { project: projectId })
      const key = created.json().key as string

      // five dead letters through real deliveries: a 500, no retry
      const ids: Array<string> = []
      for (const n of [1, 2, 3, 4, 5]) {
        const response = yield* server.call("POST", "/schedule", {
          headers: {
            "ttr-api-key": key, "ttr-url": `${hooks.origin}/fail?n=${n}`, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none",
            "ttr-title": `Invoice ${n}`, "ttr-custom-key": `invoice-${n}`, "content-type": "application/json"
          },
          body: `{"invoice":${n}}`
        })
        assert.strictEqual(response.status, 200, response.text)
        ids.push(response.json().triggerId)
      }
      const deadLetterCount = sessionCall(token, "GET", "/dead-letters", { project: projectId }).pipe(Effect.map((r) => r.json().count as number))
      yield* pollUntil("five dead letters", Effect.map(deadLetterCount, (n) => (n === 5 ? true : undefined)), { deadlineMs: 20_000 })

      // two are redriven to a working URL and delivered: they end in a dead letter no more
      for (const n of [1, 2]) {
        const redrive = yield* server.call("POST", "/actions", {
          headers: { "ttr-api-key": key, "content-type": "application/json" },
          body: JSON.stringify({ action: "replay", filter: { customKey: `invoice-${n}` }, replay: { url: `${hooks.origin}/ok` } })
        })
        assert.strictEqual(redrive.status, 202, redrive.text)
      }
      yield* pollUntil("two redriven", Effect.map(deadLetterCount, (n) => (n === 3 ? true : undefined)), { deadlineMs: 20_000 })
      assert.strictEqual(hooks.at("/ok").length, 2)
      // one more is being replayed (its replay queued): listed as such, with no Replay button
      yield* sql`UPDATE triggers SET status = 'queued' WHERE id = ${ids[4]!}`

      const { page } = yield* browserSession
      const base = server.baseUrl
      yield* step(() => page.goto(`${base}/dashboard/sign-in`))
      yield* step(() => page.getByLabel("E-mail").fill(EMAIL))
      yield* step(() => page.getByLabel("Password").fill(PASSWORD))
      yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* step(() => page.getByRole("heading", { name: "Overview" }).waitFor())

      // the overview counts the triggers ending in a dead letter now, and links to them
      yield* step(() => page.goto(`${base}/dashboard/p/${projectId}/overview`))
      const stat = page.locator(".stat", { hasText: "triggers ending in a dead letter now" })
      yield* step(() => stat.locator(".value", { hasText: "3" }).waitFor())
      // the chart says it counts attempts: five dead-letter attempts in 24 h
      yield* step(() => page.locator("figcaption", { hasText: "Dead-letter attempts per hour, last 24 h (5 in all" }).waitFor())
      yield* layout(page, "dead-letters-01-overview")
      yield* step(() => stat.getByRole("link").click())
      yield* step(() => page.waitForURL(`${base}/dashboard/p/${projectId}/dead-letters`))

      // the page: the same count, the three that end in a dead letter now (sent at once: in any order)
      yield* step(() => page.getByText("3 triggers end in a dead letter now.").waitFor())
      // the count and the rows come from two requests: wait for the rows too
      yield* step(() => page.locator("tr[data-dead-letter]").nth(2).waitFor())
      const rows = () => step(() => page.locator("tr[data-dead-letter]").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-dead-letter"))))
      assert.sameMembers(yield* rows(), [ids[4], ids[3], ids[2]])
      const third = page.locator(`tr[data-dead-letter="${ids[2]}"]`)
      assert.include(yield* step(() => third.textContent()), "Invoice 3")
      assert.include(yield* step(() => third.locator(".last-error").textContent()), "HTTP 500")
      assert.strictEqual((yield* step(() => third.locator("td.num").textContent()))?.trim(), "1")
      // the one being replayed says so and offers no Replay
      const replaying = page.locator(`tr[data-dead-letter="${ids[4]}"]`)
      yield* step(() => replaying.getByText("replaying (queued)").waitFor())
      assert.strictEqual(yield* step(() => replaying.getByRole("button", { name: "Replay" }).count()), 0)
      yield* layout(page, "dead-letters-02-list")

      // a replay asks first; going back sends nothing
      const failsBefore = hooks.at("/fail").length
      yield* step(() => third.getByRole("button", { name: "Replay" }).click())
      const dialog = page.getByRole("dialog", { name: "Confirm replay" })
      yield* step(() => dialog.getByText("Replay Invoice 3?").waitFor())
      assert.include(yield* step(() => dialog.textContent()), `Attempt 2 is sent to ${hooks.origin}/fail?n=3`)
      yield* layout(page, "dead-letters-03-confirm")
      yield* step(() => dialog.getByRole("button", { name: "Back" }).click())
      yield* step(() => dialog.waitFor({ state: "detached" }))
      assert.strictEqual(hooks.at("/fail").length, failsBefore)
      // confirmed, it is sent once more (and fails again: still a dead letter, now after 2 attempts)
      yield* step(() => third.getByRole("button", { name: "Replay" }).click())
      yield* step(() => dialog.getByRole("button", { name: "Replay" }).click())
      yield* step(() => page.getByText("Replay of Invoice 3 queued.").waitFor())
      yield* pollUntil("the replay", Effect.sync(() => (hooks.at("/fail").length === failsBefore + 1 ? true : undefined)))
      yield* pollUntil("the replay's dead letter listed", Effect.gen(function*() {
        yield* step(() => page.reload())
        yield* step(() => third.locator("td.num").waitFor())
        return (yield* step(() => third.locator("td.num").textContent()))?.trim() === "2" ? true : undefined
      }), { everyMs: 300 })
      yield* step(() => page.getByText("3 triggers end in a dead letter now.").waitFor())
    })))
})
