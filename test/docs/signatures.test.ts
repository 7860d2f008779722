// docs/signatures.md's Express target as a user runs it (the block under "Verifying with a library",
// written to a file as it stands, run with node, its PORT and TIMEWHEEL_SECRET set): real deliveries
// of the service reach it and it answers 204 to each — a GET without a body, as the README's quick
// start sends (req.body is unset then: the snippet read it as the body and failed with 401), a POST
// with a JSON body and a PUT with bytes — and 401 to a request whose signature does not verify.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { request } from "undici"
import { REPO_ROOT } from "../support/cli.ts"
import { projectIdOfKey } from "../support/fixtures.ts"
import { scheduled, TestServer, testServerLayer } from "../support/server.ts"
import { pollUntil } from "../support/wait.ts"
import { showSigningSecret } from "../../src/commands/projects.ts"
import { SqlClient } from "effect/sql"

/** The first JavaScript block after "Verifying with a library" in docs/signatures.md. */
const expressTarget = (): string => {
  const page = fs.readFileSync(path.join(REPO_ROOT, "docs", "signatures.md"), "utf8")
  const block = /```js\n([\s\S]*?)```/.exec(page.slice(page.indexOf("## Verifying with a library")))
  assert.isNotNull(block)
  return block![1]!
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as net.AddressInfo).port
      probe.close(() => resolve(port))
    })
  })

layer(testServerLayer(), { timeout: "120 seconds" })("docs/signatures.md", (it) => {
  it.effect("the Express target verifies every delivery, with a body or without, and refuses a bad signature", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      const key = yield* server.newKey()
      const projectId = yield* projectIdOfKey(key)
      const [{ name }] = yield* sql<{ name: string }>`SELECT name FROM projects WHERE id = ${projectId}`
      const secret = (yield* showSigningSecret(name!)).current
      // under the repository (git-ignored .tmp/), so it resolves express and standardwebhooks as a user's would
      fs.mkdirSync(path.join(REPO_ROOT, ".tmp"), { recursive: true })
      const dir = fs.mkdtempSync(path.join(REPO_ROOT, ".tmp", "express-target-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      fs.writeFileSync(path.join(dir, "target.mjs"), expressTarget())
      const port = yield* Effect.promise(freePort)
      const child = yield* Effect.acquireRelease(
        Effect.sync((): ChildProcess => spawn(process.execPath, [path.join(dir, "target.mjs")], {
          cwd: dir, env: { ...process.env, PORT: String(port), TIMEWHEEL_SECRET: secret }, stdio: ["ignore", "pipe", "pipe"]
        })),
        (running) => Effect.sync(() => void running.kill())
      )
      let output = ""
      child.stdout!.on("data", (chunk) => (output += chunk))
      child.stderr!.on("data", (chunk) => (output += chunk))
      const hook = `http://127.0.0.1:${port}/hook`
      yield* pollUntil("the target to listen", Effect.promise(() =>
        request(hook, { method: "POST" }).then((response) => response.body.dump().then(() => response.statusCode), () => undefined)))

      const deliveries: ReadonlyArray<readonly [string, Record<string, string>, string | Uint8Array | undefined]> = [
        ["GET", {}, undefined],
        ["POST", { "content-type": "application/json" }, `{"invoice":42}`],
        ["PUT", { "content-type": "application/octet-stream" }, new Uint8Array([1, 2, 3])],
        ["POST", {}, undefined]
      ]
      const ids: Array<string> = []
      for (const [method, headers, body] of deliveries) {
        const result = yield* scheduled({ "ttr-api-key": key, "ttr-url": hook, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none", ...headers }, {
          method,
          ...(body === undefined ? {} : { body })
        })
        ids.push(result.triggerId)
      }
      for (const [i, id] of ids.entries()) {
        const execution = yield* pollUntil(`delivery ${i}`, Effect.map(
          server.call("GET", `/jobs/${id}/executions`, { headers: { "ttr-api-key": key } }),
          (response) => response.json().executions[0] as { httpStatus: number } | undefined
        ), { deadlineMs: 20_000 })
        assert.strictEqual(execution.httpStatus, 204, `${deliveries[i]![0]} delivery: ${output}`)
      }

      // a signature that does not verify
      const forged = yield* Effect.promise(() => request(hook, {
        method: "POST",
        headers: { "webhook-id": "x", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,AAAA" },
        body: "{}"
      }).then((response) => response.body.dump().then(() => response.statusCode)))
      assert.strictEqual(forged, 401)
    })))
})
