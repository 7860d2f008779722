// examples/mcp-client.ts as a user runs it (docs/mcp.md): `node examples/mcp-client.ts` against a real
// service over HTTPS, trusting its self-signed certificate through NODE_EXTRA_CA_CERTS, connects
// to /mcp with the official SDK, lists the tools, schedules a request and sees it delivered; without
// NODE_EXTRA_CA_CERTS it fails on the certificate, as docs/mcp.md says. Without TARGET_URL it sends
// to the /livez of the service's OPS_PORT; a request that ends as a dead letter, or is not delivered
// within its 10 s, is a line on stderr and exit 1 (it exited 0 saying nothing).
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"
import { REPO_ROOT } from "../support/cli.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"

const EXAMPLE = path.join(REPO_ROOT, "examples", "mcp-client.ts")

/** `node examples/mcp-client.ts` with these variables; its exit code and output. */
const runExample = (env: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ readonly code: number; readonly out: string }>((resolve) => {
      const { NODE_EXTRA_CA_CERTS: _, ...inherited } = process.env
      execFile(process.execPath, [EXAMPLE], { cwd: REPO_ROOT, env: { ...inherited, ...env }, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, out: `${stdout}${stderr}` }))
    }))

layer(testServerLayer(), { timeout: "120 seconds" })("examples/", (it) => {
  it.effect("mcp-client.ts schedules through /mcp and sees its request delivered", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const hooks = yield* target
      const port = new URL(server.baseUrl).port
      const env = { TIMEWHEEL_URL: `https://localhost:${port}/mcp`, TIMEWHEEL_KEY: key, TARGET_URL: `${hooks.origin}/from-mcp` }

      const trusted = yield* runExample({ ...env, NODE_EXTRA_CA_CERTS: path.join(server.config.dataDir, "tls", "cert.pem") })
      assert.strictEqual(trusted.code, 0, trusted.out)
      const lines = trusted.out.trim().split("\n")
      assert.match(lines[0]!, /^tools: .*schedule_trigger.*get_job/)
      const id = /^scheduled: (\S+) \(registered\) at /.exec(lines[1]!)?.[1]
      assert.isString(id, trusted.out)
      assert.strictEqual(lines[2], `trigger ${id}: completed, delivered`)
      assert.strictEqual(hooks.at("/from-mcp").length, 1)
      assert.strictEqual(hooks.at("/from-mcp")[0]!.method, "GET")

      // without the certificate trusted, the connection fails on it
      const untrusted = yield* runExample(env)
      assert.notStrictEqual(untrusted.code, 0)
      assert.match(untrusted.out, /self[- ]signed certificate/i)
    })))

  it.effect("mcp-client.ts sends to OPS_PORT's /livez by default, and fails saying why when nothing is delivered", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const hooks = yield* target
      const port = new URL(server.baseUrl).port
      const trusted = { TIMEWHEEL_URL: `https://localhost:${port}/mcp`, TIMEWHEEL_KEY: key, NODE_EXTRA_CA_CERTS: path.join(server.config.dataDir, "tls", "cert.pem") }

      // no TARGET_URL: the /livez of the service's OPS_PORT (here the recorder's port stands in for it)
      const byOpsPort = yield* runExample({ ...trusted, OPS_PORT: String(hooks.port) })
      assert.strictEqual(byOpsPort.code, 0, byOpsPort.out)
      assert.deepStrictEqual(hooks.at("/livez").map((arrival) => arrival.method), ["GET"])

      // a dead letter (a 500; the project's default policy retries network failures only)
      hooks.reply("/down", { status: 500 })
      const failed = yield* runExample({ ...trusted, TARGET_URL: `${hooks.origin}/down` })
      assert.strictEqual(failed.code, 1, failed.out)
      assert.match(failed.out, /trigger \S+: completed, dead_letter \(see its executions: get_job, list_executions\)/)

      // nothing within 10 s (a target that never answers)
      hooks.reply("/never", "hang")
      const late = yield* runExample({ ...trusted, TARGET_URL: `${hooks.origin}/never` })
      assert.strictEqual(late.code, 1, late.out)
      assert.match(late.out, new RegExp(`trigger \\S+: not delivered within 10 s \\(status running, \\d+ attempts\\): is ${hooks.origin}/never reachable from the service\\?`))

      // OPS_PORT off and no TARGET_URL: nothing to send to
      const off = yield* runExample({ ...trusted, OPS_PORT: "off" })
      assert.deepStrictEqual([off.code, off.out.trim()], [1, "OPS_PORT is off, so the service has no /livez to send to: set TARGET_URL"])
    })))
})
