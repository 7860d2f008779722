// A database server that stops under the service (docs/errors.md, the 503): the service
// runs on a private embedded PostgreSQL of its own (never the machine's shared server), which the test
// stops; then /schedule, the log reads and the retry policy answer 503 `ServiceUnavailable` with
// `Retry-After: 1`, and /health 503 with its usual body, never a 500.
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import { embeddedUrl, type EmbeddedServer, startEmbedded } from "../../src/store/embedded.ts"
import { makeTempDir } from "../support/database.ts"
import { serviceOnDatabase } from "../support/outage.ts"
import { pollUntil } from "../support/wait.ts"
import { TestServer } from "../support/server.ts"

let embedded: EmbeddedServer | undefined

/** A private embedded server (stopped and removed with the layer), and the service on it. */
const ServiceOnPrivateServer = Layer.unwrap(Effect.gen(function*() {
  const dir = makeTempDir("stopped")
  const server = yield* Effect.acquireRelease(
    Effect.promise(() => startEmbedded(dir, () => {})),
    (server) => Effect.promise(() => server.stop().catch(() => {}).then(() => fs.rmSync(dir, { recursive: true, force: true })))
  )
  embedded = server
  return serviceOnDatabase(embeddedUrl(server, "postgres"))
}))

layer(ServiceOnPrivateServer, { timeout: "120 seconds" })("database server stopped", (it) => {
  it.effect("503 ServiceUnavailable with Retry-After: 1 from every endpoint, /health 503 with its body", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const fresh = yield* server.newKey()
      const auth = { "ttr-api-key": key }
      const schedule = { ...auth, "ttr-url": "http://127.0.0.1:9/hook", "ttr-scheduled-at": "now | add 1h" }
      const created = yield* server.call("POST", "/schedule", { headers: schedule })
      assert.strictEqual(created.status, 200, created.text)
      const jobId: string = created.json().triggerId

      yield* Effect.promise(() => embedded!.stop())

      const calls: ReadonlyArray<readonly [string, string, Record<string, string>]> = [
        ["POST", "/schedule", schedule],
        ["POST", "/schedule", { ...schedule, "ttr-custom-key": "k" }],
        ["DELETE", "/cancel", { ...auth, "ttr-trigger-id": jobId }],
        ["GET", "/jobs", auth],
        ["GET", `/jobs/${jobId}`, auth],
        ["GET", "/executions", auth],
        ["GET", "/project/retry-policy", auth],
        ["GET", "/jobs", { "ttr-api-key": fresh }]
      ]
      for (const [method, path, headers] of calls) {
        const response = yield* server.call(method, path, { headers })
        assert.strictEqual(response.status, 503, `${method} ${path}: ${response.status} ${response.text}`)
        assert.deepStrictEqual(response.json(), { _tag: "ServiceUnavailable", message: "Database unavailable" })
        assert.strictEqual(response.headers["retry-after"], "1")
      }
      for (const headers of [auth, { "ttr-api-key": fresh }]) {
        // /health reads what the scheduler found in its last turn (every second)
        const health = yield* pollUntil("/health to say unavailable", Effect.map(
          server.call("GET", "/health", { headers }),
          (response) => (response.status === 503 ? response : undefined)
        ), { deadlineMs: 5_000 })
        assert.strictEqual(health.status, 503, health.text)
        const body = health.json()
        assert.deepStrictEqual(Object.keys(body), ["status", "schedulerStaleMs", "materializerStaleMs"])
        assert.strictEqual(body.status, "unavailable")
      }
    }))
})
