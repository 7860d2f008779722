// Backpressure from the target end to end (docs/tag-policies.md "Backpressure from the target"),
// against the real service and a local target that answers from a script: a 429 or 503 of a trigger
// with a tag that has a policy holds every trigger of the tag until the Retry-After time (they wait
// `queued`, the policy view shows heldUntil, /metrics counts the hold), then they go; the refused
// trigger's retry waits at least as long, with a tag or without; without Retry-After the hold is 1 s,
// doubled by a refusal within a minute, back to 1 s after a 2xx; a Retry-After of two hours holds one
// hour; an HTTP date is read; other tags and untagged triggers never wait.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "undici"
import { OpsListener } from "../../src/ops/opsServer.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { arrivalsAt, target, type Target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

/** A project with helpers for its policies, triggers and views. */
const project = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const headers = { "ttr-api-key": key }
  const policy = (body: Record<string, unknown>) =>
    Effect.map(server.call("POST", "/tag-policies", { headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) }),
      (response) => {
        assert.strictEqual(response.status, 201, response.text)
      })
  const views = Effect.map(server.call("GET", "/tag-policies", { headers }), (response) => response.json() as Array<{ tag: string; heldUntil: string | null }>)
  return {
    policy,
    /** The end of the tag's hold as the policy view shows it (ms), or null. */
    heldUntil: (tag: string) => Effect.map(views, (all) => {
      const until = all.find((view) => view.tag === tag)?.heldUntil ?? null
      return until === null ? null : Date.parse(until)
    }),
    schedule: (url: string, tags: string | null, extra: Record<string, string> = {}) =>
      Effect.map(server.call("POST", "/schedule", {
        headers: { ...headers, "ttr-url": url, "ttr-scheduled-at": "now", ...(tags === null ? {} : { "ttr-tags": tags }), ...extra }
      }), (response) => {
        assert.strictEqual(response.status, 200, response.text)
        return response.json().triggerId as string
      }),
    status: (id: string) => Effect.map(server.call("GET", `/jobs/${id}`, { headers }), (response) => response.json().status as string)
  }
})

/** A number of /metrics by its name and labels as written (`name{label="value"}`), 0 when absent. */
const metric = (line: string) =>
  Effect.gen(function*() {
    const ops = (yield* OpsListener).url!
    const text = yield* Effect.promise(async () => (await request(`${ops}/metrics`)).body.text())
    const found = text.split("\n").find((row) => row.startsWith(`${line} `))
    return found === undefined ? 0 : Number(found.slice(line.length + 1))
  })

const arrivedAt = (t: Target, path: string, index = 0) => Effect.map(arrivalsAt(t, path, index + 1), (all) => all[index]!.arrivedAtMs)

/** A hold's end as the view shows it, once it shows one later than `afterMs`. */
const heldUntilAfter = (p: Effect.Success<typeof project>, tag: string, afterMs: number) =>
  pollUntil(`a hold of ${tag}`, Effect.map(p.heldUntil(tag), (until) => (until !== null && until > afterMs ? until : undefined)))

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("holds after a refusal of the target", (it) => {
  it.effect("429 with Retry-After: 2 holds the tag for 2 s: its triggers wait queued, the view shows heldUntil, /metrics counts it; then they go, other tags never waited", () =>
    Effect.gen(function*() {
      const p = yield* project
      const t = yield* target
      yield* p.policy({ tag: "held", maxConcurrent: 10 })
      yield* p.policy({ tag: "free", maxConcurrent: 10 })
      const holdsBefore = yield* metric(`timewheel_tag_holds_total{reason="retry_after"}`)
      t.script("/first", [{ status: 429, headers: { "retry-after": "2" } }])
      yield* p.schedule(`${t.origin}/first`, "held")
      const refusedAt = yield* arrivedAt(t, "/first")
      const heldUntil = yield* heldUntilAfter(p, "held", refusedAt)
      assert.isAtLeast(heldUntil, refusedAt + 1_900)
      assert.isAtMost(heldUntil, refusedAt + 2_500)

      const waiting = [yield* p.schedule(`${t.origin}/later`, "held"), yield* p.schedule(`${t.origin}/later`, "held")]
      yield* p.schedule(`${t.origin}/other`, "free")
      yield* pollUntil("both waiting queued", Effect.map(Effect.forEach(waiting, p.status), (statuses) =>
        statuses.every((status) => status === "queued") ? true : undefined))
      assert.strictEqual(yield* metric("timewheel_tags_held"), 1)
      assert.strictEqual((yield* metric(`timewheel_tag_holds_total{reason="retry_after"}`)) - holdsBefore, 1)
      // another tag goes on meanwhile
      assert.isBelow((yield* arrivedAt(t, "/other")) - refusedAt, 1_500)

      const later = yield* arrivalsAt(t, "/later", 2)
      for (const arrival of later) {
        assert.isAtLeast(arrival.arrivedAtMs, heldUntil, "nothing of the tag starts before heldUntil")
        assert.isBelow(arrival.arrivedAtMs - heldUntil, 1_000, "it starts soon after the hold ends")
      }
      assert.isNull(yield* p.heldUntil("held"))
    }))

  it.effect("the refused trigger's retry waits at least until Retry-After, whatever its policy's delay; also a trigger without tags", () =>
    Effect.gen(function*() {
      const p = yield* project
      const t = yield* target
      yield* p.policy({ tag: "retried", retryStrategy: "fixed", retryInitialDelaySeconds: 0, retryMaxAttempts: 3, retryOn: "non_2xx" })
      t.script("/tagged", [{ status: 429, headers: { "retry-after": "3" } }])
      t.script("/untagged", [{ status: 503, headers: { "retry-after": "2" } }])
      const retry = { "ttr-retry-strategy": "fixed", "ttr-retry-initial-delay": "0", "ttr-retry-max-attempts": "3", "ttr-retry-on": "non_2xx" }
      yield* p.schedule(`${t.origin}/tagged`, "retried")
      yield* p.schedule(`${t.origin}/untagged`, null, retry)
      const [first, second] = yield* arrivalsAt(t, "/tagged", 2)
      assert.isAtLeast(second!.arrivedAtMs - first!.arrivedAtMs, 3_000)
      const [untaggedFirst, untaggedSecond] = yield* arrivalsAt(t, "/untagged", 2)
      assert.isAtLeast(untaggedSecond!.arrivedAtMs - untaggedFirst!.arrivedAtMs, 2_000)
    }))

  it.effect("without Retry-After: held 1 s, then 2 s after a second refusal within the minute, and 1 s again after a 2xx", () =>
    Effect.gen(function*() {
      const p = yield* project
      const t = yield* target
      yield* p.policy({ tag: "backoff", maxConcurrent: 5 })
      t.script("/b", [{ status: 503 }, { status: 503 }, { status: 200 }, { status: 503 }, { status: 200 }])
      const holds: Array<number> = []
      let after = 0
      for (let i = 0; i < 5; i++) {
        yield* p.schedule(`${t.origin}/b`, "backoff")
        const at = yield* arrivedAt(t, "/b", i)
        if (i > 0) assert.isAtLeast(at, after, `attempt ${i} waited for the hold`)
        if (i === 0 || i === 1 || i === 3) {
          after = yield* heldUntilAfter(p, "backoff", at)
          holds.push(after - at)
        }
      }
      // 1 s, doubled to 2 s, then 1 s again once a 2xx cleared the doubling (give or take the clocks)
      assert.deepStrictEqual(holds.map((ms) => Math.round(ms / 1000)), [1, 2, 1], JSON.stringify(holds))
    }))

  it.effect("a Retry-After of two hours holds for one hour; an HTTP date is read; an untagged refusal holds nothing", () =>
    Effect.gen(function*() {
      const p = yield* project
      const t = yield* target
      yield* p.policy({ tag: "capped", maxConcurrent: 5 })
      yield* p.policy({ tag: "dated", retryStrategy: "none" })
      t.script("/capped", [{ status: 429, headers: { "retry-after": "7200" } }])
      const dateMs = Math.ceil((Date.now() + 30_000) / 1000) * 1000
      t.script("/dated", [{ status: 503, headers: { "retry-after": new Date(dateMs).toUTCString() } }])
      t.script("/plain", [{ status: 429, headers: { "retry-after": "60" } }])
      yield* p.schedule(`${t.origin}/capped`, "capped")
      yield* p.schedule(`${t.origin}/dated`, "dated")
      yield* p.schedule(`${t.origin}/plain`, null)
      const cappedAt = yield* arrivedAt(t, "/capped")
      const capped = yield* heldUntilAfter(p, "capped", cappedAt)
      assert.isAtLeast(capped - cappedAt, 3_600_000 - 1_000)
      assert.isAtMost(capped - cappedAt, 3_600_000 + 1_000)
      // a policy of retries only: the tag is held too, until the date named (the database's clock
      // and this node's, as a lease round measured them, may differ by a few milliseconds)
      assert.approximately(yield* heldUntilAfter(p, "dated", Date.now()), dateMs, 50)
      // untagged: the next untagged trigger is not held back
      yield* arrivedAt(t, "/plain")
      yield* p.schedule(`${t.origin}/plain2`, null)
      assert.isBelow((yield* arrivedAt(t, "/plain2")) - (yield* arrivedAt(t, "/plain")), 5_000)
    }))
})
