// README.md's five minutes, as written: its CLI commands and its first call, taken from the README's
// own code blocks and run by `sh` against a real service (only the ports differ: the test's service
// listens on free ones), then what the README says follows: the answer it shows, the request delivered
// to its target with the answer it names, and the administrator able to sign in to the dashboard (the
// browser test walks the dashboard itself).
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { REPO_ROOT, runChild } from "../support/cli.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { pollUntil } from "../support/wait.ts"
import { signInCall } from "../support/dashboard.ts"

const README = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8")

/** The shell blocks of the README's first section (not its sample of the log). */
const firstSteps = () => {
  const section = README.slice(README.indexOf("## Five minutes"), README.indexOf("\n## ", README.indexOf("## Five minutes") + 1))
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((match) => match[1]!)
}

const block = (containing: string) => {
  const found = firstSteps().find((code) => code.includes(containing))
  if (found === undefined) throw new Error(`the README's first steps have no block with ${containing}`)
  return found
}

/** A port nothing listens on now. */
const freePort = await new Promise<number>((resolve) => {
  const probe = net.createServer().listen(0, "127.0.0.1", () => {
    const port = (probe.address() as net.AddressInfo).port
    probe.close(() => resolve(port))
  })
})

const PASSWORD = "readme-newcomer-1"

layer(testServerLayer({ OPS_PORT: String(freePort) }), { timeout: "180 seconds" })("README.md's first steps", (it) => {
  it.effect("the commands as written lead to a delivered request and an administrator who signs in", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const port = new URL(server.baseUrl).port
      const env = { DATABASE_URL: server.config.databaseUrl! }
      const sh = (script: string, stdin = "") => Effect.promise(() => runChild("sh", ["-ec", script], { env, stdin, timeoutMs: 120_000 }))

      // the CLI block: a project, a key, an administrator (a password piped in: no terminal here)
      const cli = yield* sh(`${block("project create my-project")}\necho "KEY=$KEY"`, `${PASSWORD}\n`)
      assert.strictEqual(cli.code, 0, cli.stdout + cli.stderr)
      assert.include(cli.stdout, "admin you@example.com created")
      const key = /^KEY=(ttr_[0-9a-f]{48})$/m.exec(cli.stdout)?.[1]
      assert.isString(key, cli.stdout)

      // the first call, to the service's own /livez, on this service's ports
      const call = block("ttr-url: http://127.0.0.1:9464/livez")
        .replaceAll("https://localhost:8443", `https://localhost:${port}`)
        .replaceAll("127.0.0.1:9464", `127.0.0.1:${freePort}`)
      const answered = yield* sh(`KEY=${key}\n${call}`)
      assert.strictEqual(answered.code, 0, answered.stdout + answered.stderr)
      const answer = JSON.parse(answered.stdout)
      const shown = JSON.parse(/The answer is `(\{.*?\})`/.exec(README)![1]!.replace(/"…"/g, '""'))
      assert.deepStrictEqual(Object.keys(answer).sort(), Object.keys(shown).sort(), "the answer the README shows")
      assert.deepStrictEqual([answer.operation, answer.kind, answer.status], [shown.operation, shown.kind, shown.status])

      // "Ten seconds later": completed and delivered, the target's answer recorded
      const auth = { headers: { "ttr-api-key": key! } }
      const job = yield* pollUntil("the delivery", Effect.map(server.call("GET", `/jobs/${answer.triggerId}`, auth), (r) =>
        r.json().outcome === "delivered" ? r.json() : undefined), { deadlineMs: 40_000 })
      assert.strictEqual(job.status, "completed")
      const executions = (yield* server.call("GET", `/jobs/${answer.triggerId}/executions`, auth)).json().executions
      assert.strictEqual(executions[0].responseBody, `{"status":"ok"}`)
      assert.include(README, "`{\"status\":\"ok\"}`")

      // and the dashboard's sign-in takes the administrator the README made
      const signIn = yield* signInCall("you@example.com", PASSWORD)
      assert.strictEqual(signIn.status, 200, signIn.text)
    }))
})
