// The dashboard's bulk actions in a real browser (docs/bulk-actions.md): headless Chromium (Debian's, driven by
// playwright-core) against the real service. On the triggers page, a tag filter shows how many match;
// "select all" then "Cancel them" asks for a confirmation naming the count and the action, and the
// progress ends with the count cancelled (another project's trigger with the same tag untouched; a
// filter matching nothing offers nothing to select). On the dead-letters page, "select all" and
// "Replay dead letters" redrive every dead letter, here to another URL, and a repeat finds none left.
// Every step is photographed into .tmp/screenshots/.
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { createAdmin } from "../../src/commands/admins.ts"
import { createProject } from "../../src/commands/projects.ts"
import { REPO_ROOT } from "../support/cli.ts"
import { insertDeadLetters, insertTriggers, statusOf } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"
import { browserSession, layout, screenshot, step } from "../support/browser.ts"

const Env = Layer.unwrap(Effect.sync(() => {
  // the pages' bundle, as npm start builds it
  execFileSync("npm", ["run", "--silent", "build"], { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "inherit"] })
  return testServerLayer()
}))

const EMAIL = "grace@example.com"
const PASSWORD = "hopper-1952"

layer(Env, { timeout: "240 seconds", excludeTestServices: true })("bulk actions in Chromium", (it) => {
  it.effect("select all that match, confirm with the count, follow the progress: a cancel, then a dead-letter redrive", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer
      const hooks = yield* target
      yield* createAdmin(EMAIL, PASSWORD).pipe(Effect.orDie)
      const projectId = yield* createProject("bulk-shop", undefined).pipe(Effect.orDie)
      const otherId = yield* createProject("bulk-other", undefined).pipe(Effect.orDie)
      const leaving = yield* insertTriggers(Array.from({ length: 12 }, () => ({ projectId, tags: ["leaving"] })))
      const [done] = yield* insertTriggers([{ projectId, tags: ["leaving"], status: "completed" }])
      const [theirs] = yield* insertTriggers([{ projectId: otherId, tags: ["leaving"] }])
      const deadLetters = yield* insertDeadLetters(Array.from({ length: 5 }, (_, n) => ({ projectId, url: `${hooks.origin}/down?n=${n}` })))

      const { page } = yield* browserSession
      const base = server.baseUrl
      yield* step(() => page.goto(`${base}/dashboard/sign-in`))
      yield* step(() => page.getByLabel("E-mail").fill(EMAIL))
      yield* step(() => page.getByLabel("Password").fill(PASSWORD))
      yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* step(() => page.getByRole("heading", { name: "Overview" }).waitFor())

      // triggers: without a filter, everything can be selected but not cancelled (a cancel takes a filter)
      yield* step(() => page.goto(`${base}/dashboard/p/${projectId}/triggers`))
      // every trigger of the project counts: 12 leaving, 1 done, 5 dead letters (the empty filter is not "the dead letters")
      yield* step(() => page.getByText("18 triggers match this filter.").waitFor())
      yield* step(() => page.getByRole("button", { name: "Select all 18 that match this filter" }).click())
      yield* step(() => page.getByText("Set a filter to cancel triggers.").waitFor())
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Cancel them" }).count()), 0)
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Replay dead letters" }).count()), 1)
      yield* screenshot(page, "bulk-00-no-filter-no-cancel")
      yield* step(() => page.getByRole("button", { name: "Clear selection" }).click())

      // a filter matching nothing offers nothing to select
      yield* step(() => page.getByLabel("Tag", { exact: true }).fill("nobody-has-this"))
      yield* step(() => page.getByRole("button", { name: "Apply" }).click())
      yield* step(() => page.getByText("0 triggers match this filter.").waitFor())
      assert.isTrue(yield* step(() => page.getByRole("button", { name: /^Select all/ }).isDisabled()))

      // the tag: 13 match; select all, cancel them, confirm naming 13, follow the progress
      yield* step(() => page.getByLabel("Tag", { exact: true }).fill("leaving"))
      yield* step(() => page.getByRole("button", { name: "Apply" }).click())
      yield* step(() => page.getByText("13 triggers match this filter.").waitFor())
      // the filter is in the address: a reload (or the link, shared) keeps it, and back goes to the previous one
      assert.match(page.url(), /\/triggers\?tag=leaving$/)
      yield* step(() => page.reload())
      yield* step(() => page.getByText("13 triggers match this filter.").waitFor())
      assert.strictEqual(yield* step(() => page.getByLabel("Tag", { exact: true }).inputValue()), "leaving")
      yield* step(() => page.goBack())
      yield* step(() => page.getByText("0 triggers match this filter.").waitFor())
      assert.strictEqual(yield* step(() => page.getByLabel("Tag", { exact: true }).inputValue()), "nobody-has-this")
      yield* step(() => page.goForward())
      yield* step(() => page.getByText("13 triggers match this filter.").waitFor())
      yield* screenshot(page, "bulk-01-triggers-matching")
      yield* step(() => page.getByRole("button", { name: "Select all 13 that match this filter" }).click())
      yield* step(() => page.getByText("All 13 matching triggers selected.").waitFor())
      yield* step(() => page.getByRole("button", { name: "Cancel them" }).click())
      const dialog = page.getByRole("dialog", { name: "Confirm bulk action" })
      yield* step(() => dialog.getByText("Cancel 13 triggers?").waitFor())
      yield* screenshot(page, "bulk-02-confirm-cancel")
      yield* step(() => dialog.getByRole("button", { name: "Cancel 13 triggers" }).click())
      yield* step(() => page.locator(`.bulk-progress[data-action-status="completed"]`).waitFor())
      const progress = yield* step(() => page.locator(".bulk-progress").textContent())
      assert.include(progress, "13 of 13 triggers processed · 12 cancelled")
      assert.include(progress, "untouched: completed 1")
      yield* screenshot(page, "bulk-03-cancel-done")
      for (const id of leaving) assert.strictEqual(yield* statusOf(id), "cancelled")
      assert.deepStrictEqual([yield* statusOf(done!), yield* statusOf(theirs!)], ["completed", "registered"])
      // the list follows
      yield* step(() => page.locator(`tr[data-trigger="${leaving[0]}"] .badge`, { hasText: "cancelled" }).waitFor())

      // dead letters: select all, replay them to another URL
      yield* step(() => page.goto(`${base}/dashboard/p/${projectId}/dead-letters`))
      yield* step(() => page.getByText("5 triggers end in a dead letter now.").waitFor())
      yield* step(() => page.getByRole("button", { name: "Select all 5 that match this filter" }).click())
      yield* step(() => page.getByRole("button", { name: "Replay dead letters" }).click())
      yield* step(() => dialog.getByText("Replay 5 dead letters?").waitFor())
      yield* step(() => dialog.getByLabel(/Send to another URL/).fill(`${hooks.origin}/up`))
      yield* screenshot(page, "bulk-04-confirm-replay")
      yield* step(() => dialog.getByRole("button", { name: "Replay 5 dead letters" }).click())
      yield* step(() => page.locator(`.bulk-progress[data-action-status="completed"]`).waitFor())
      assert.include(yield* step(() => page.locator(".bulk-progress").textContent()), "5 of 5 triggers processed · 5 replayed")
      yield* pollUntil("five replays at the new URL", Effect.sync(() => (hooks.at("/up").length === 5 ? true : undefined)))
      assert.strictEqual(hooks.at("/down").length, 0)
      yield* screenshot(page, "bulk-05-replay-done")

      // once the replays are recorded, nothing is a dead letter any more: nothing to select
      yield* pollUntil("no dead letter left", Effect.gen(function*() {
        yield* step(() => page.reload())
        yield* step(() => page.locator(".bulk-count", { hasNotText: "Counting" }).waitFor())
        const text = yield* step(() => page.locator(".bulk-count").textContent())
        return text === "0 triggers end in a dead letter now." ? true : undefined
      }), { everyMs: 300 })
      assert.isTrue(yield* step(() => page.getByRole("button", { name: /^Select all/ }).isDisabled()))
      yield* screenshot(page, "bulk-06-no-dead-letter-left")

      // a replayed attempt's page says where it went: the replay's URL, not the trigger's
      yield* step(() => page.goto(`${base}/dashboard/p/${projectId}/triggers/${deadLetters[0]}`))
      const replayAttempt = page.locator(`details.execution[data-attempt="2"]`)
      yield* step(() => replayAttempt.locator(".tag.override", { hasText: "other URL" }).waitFor())
      if (!(yield* step(() => replayAttempt.evaluate((details) => (details as unknown as { open: boolean }).open)))) {
        yield* step(() => replayAttempt.locator("summary").click())
      }
      const sentTo = yield* step(() => replayAttempt.locator(".sent-to").textContent())
      assert.include(sentTo, `${hooks.origin}/up`)
      assert.include(sentTo, "the replay's URL, not the trigger's")
      yield* layout(page, "bulk-07-replayed-attempt")
    })))
})
