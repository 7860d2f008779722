// examples/mcp-client.ts as a user runs it (issue 24): `node examples/mcp-client.ts` against a real
// service over HTTPS, trusting its self-signed certificate through NODE_EXTRA_CA_CERTS, connects
// to /mcp with the official SDK, lists the tools, schedules a request and sees it delivered; without
// NODE_EXTRA_CA_CERTS it fails on the certificate, as docs/mcp.md says.
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
})
