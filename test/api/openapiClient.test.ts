// The OpenAPI document for client generators as a user meets it: printed by `npm run --silent cli
// -- openapi` (a child process, as docs/README.md says), it passes Redocly's linter with its
// recommended rules (no error, no warning: this is CI's lint); a typed client generated from it
// (openapi-typescript's types, openapi-fetch's client, type-checked by tsc) runs the program of
// docs/README.md ("Typed clients") as it is written there — only its service URL and target URL
// replaced by this test's — against the real service over HTTPS (the self-signed certificate trusted
// through NODE_EXTRA_CA_CERTS, as a user would), and the target receives the /schedule body byte for
// byte (the document typed it as a string, and openapi-fetch sent it JSON-encoded again, until the
// body became raw bytes and the docs showed the bodySerializer). Then the same client lists, reads
// and cancels.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import openapiTS, { astToString } from "openapi-typescript"
import { childEnv, REPO_ROOT, runCli } from "../support/cli.ts"
import { makeTempDir } from "../support/database.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

const bin = (name: string) => path.join(REPO_ROOT, "node_modules", ".bin", name)

/** Runs a command; its exit code and output (never fails the effect). */
const run = (command: string, args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env?: Record<string, string> }) =>
  Effect.promise(() =>
    new Promise<{ readonly code: number; readonly out: string }>((resolve) => {
      execFile(command, [...args], { cwd: options.cwd, env: { ...childEnv({}), ...options.env }, timeout: 120_000 }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, out: `${stdout}${stderr}` }))
    }))

/** The document `npm run --silent cli -- openapi` prints (with these arguments). */
const cliDocument = (args: ReadonlyArray<string> = []) =>
  Effect.promise(async () => {
    const result = await runCli(["openapi", ...args], { env: {} })
    assert.deepStrictEqual([result.code, result.stderr], [0, ""])
    return result.stdout
  })

/** The first TypeScript block after the "Typed clients" heading of docs/README.md. */
const typedClientProgram = (): string => {
  const readme = fs.readFileSync(path.join(REPO_ROOT, "docs", "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("## Typed clients"))
  const block = /```ts\n([\s\S]*?)```/.exec(section)
  assert.isNotNull(block, "docs/README.md has a TypeScript block under Typed clients")
  return block![1]!
}

/** What the same client does next: list, read, cancel, and an empty 400 read from its hint. */
const MORE_CALLS = `
const id = scheduled.data.triggerId
const listed = await timewheel.GET("/jobs", { params: { query: { status: "registered", limit: 10 } } })
const cancelled = await timewheel.DELETE("/cancel", { params: { header: { "ttr-trigger-id": id } } })
const after = await timewheel.GET("/jobs/{id}", { params: { path: { id } } })
const missing = await timewheel.DELETE("/cancel", { params: { header: {} } })
console.log(JSON.stringify({
  id,
  status: scheduled.data.status,
  listed: listed.data?.jobs.map((job) => job.id),
  cancelStatus: cancelled.response.status,
  statusAfter: after.data?.status,
  missingStatus: missing.response.status,
  missingHint: missing.response.headers.get("timewheel-error")
}))
`

const TSCONFIG = {
  compilerOptions: {
    target: "es2024", lib: ["es2024", "dom"], module: "nodenext", moduleResolution: "nodenext", types: ["node"], strict: true,
    exactOptionalPropertyTypes: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true, verbatimModuleSyntax: true,
    typeRoots: [path.join(REPO_ROOT, "node_modules", "@types")]
  },
  include: ["*.ts"]
}

layer(testServerLayer(), { timeout: "180 seconds" })("the OpenAPI document for client generators", (it) => {
  it.effect("Redocly's recommended rules find no error and no warning in the CLI's document", () =>
    Effect.gen(function*() {
      const dir = makeTempDir("openapi")
      const file = path.join(dir, "openapi.json")
      fs.writeFileSync(file, yield* cliDocument())
      const lint = yield* run(bin("redocly"), ["lint", "--extends=recommended", "--format=stylish", file], {
        cwd: dir,
        env: { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" }
      })
      fs.rmSync(dir, { recursive: true, force: true })
      assert.strictEqual(lint.code, 0, lint.out)
      assert.notMatch(lint.out, /warning/i, lint.out)
    }))

  it.effect("its servers, security schemes, operation ids and raw /schedule body; --server names the server", () =>
    Effect.gen(function*() {
      const document = JSON.parse(yield* cliDocument())
      assert.deepStrictEqual(document.servers.map((s: { url: string }) => s.url), ["https://127.0.0.1:8443"])
      const schemes = document.components.securitySchemes
      assert.deepStrictEqual([schemes.apiKey.type, schemes.apiKey.in, schemes.apiKey.name], ["apiKey", "header", "ttr-api-key"])
      assert.deepStrictEqual([schemes.bearer.type, schemes.bearer.scheme], ["http", "bearer"])
      assert.deepStrictEqual([schemes.session.in, schemes.session.name], ["cookie", "__Host-timewheel-session"])
      const operations = Object.values(document.paths).flatMap((item) =>
        Object.values(item as Record<string, { operationId: string; security: unknown; parameters?: Array<{ name: string }> }>))
      const ids = operations.map((operation) => operation.operationId)
      assert.strictEqual(new Set(ids).size, ids.length, `shared ids: ${ids.filter((id, i) => ids.indexOf(id) !== i)}`)
      for (const operation of operations) {
        assert.isArray(operation.security, operation.operationId)
        assert.notInclude((operation.parameters ?? []).map((p) => p.name.toLowerCase()), "ttr-api-key", operation.operationId)
      }
      const schedule = document.paths["/schedule"]
      assert.deepStrictEqual(Object.keys(schedule), ["get", "post", "put", "patch", "delete"])
      assert.deepStrictEqual(schedule.post.security, [{ apiKey: [] }])
      // raw bytes of any media type: no schema a generator would encode to
      assert.deepStrictEqual(schedule.post.requestBody.content, { "*/*": {} })
      assert.deepStrictEqual(document.paths["/health"].get.security, [{ apiKey: [] }, { bearer: [] }, { session: [] }])
      assert.deepStrictEqual(document.paths["/openapi/json"].get.security, [])

      const named = JSON.parse(yield* cliDocument(["--server", "https://timewheel.internal:9443/"]))
      assert.deepStrictEqual(named.servers.map((s: { url: string }) => s.url), ["https://timewheel.internal:9443"])
      const bad = yield* Effect.promise(() => runCli(["openapi", "--server", "not a url"], { env: {} }))
      assert.deepStrictEqual([bad.code, bad.stderr.trim()], [1, `--server must be a URL, got "not a url"; usage: openapi [--server <https URL of the service>]`])
    }))

  it.effect("the typed client of docs/README.md delivers the /schedule body byte for byte, then lists, reads and cancels", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const hooks = yield* target
      const key = yield* server.newKey()
      const document = JSON.parse(yield* cliDocument())
      // under the repository (git-ignored .tmp/), so the program resolves openapi-fetch as a user's would
      fs.mkdirSync(path.join(REPO_ROOT, ".tmp"), { recursive: true })
      const dir = fs.mkdtempSync(path.join(REPO_ROOT, ".tmp", "openapi-client-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      fs.writeFileSync(path.join(dir, "timewheel.ts"), astToString(yield* Effect.promise(() => openapiTS(document))))
      const port = new URL(server.baseUrl).port
      const program = typedClientProgram()
        .replace("https://localhost:8443", `https://localhost:${port}`)
        .replace("https://example.com/hooks/hello", `${hooks.origin}/hello`)
        // far enough ahead to be cancelled after it is read back
        .replace(`"now | add 10s"`, `"now | add 1h"`)
      fs.writeFileSync(path.join(dir, "client.ts"), program + MORE_CALLS)
      fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG))

      const typecheck = yield* run(bin("tsc"), ["-p", dir], { cwd: dir })
      assert.strictEqual(typecheck.code, 0, typecheck.out)

      const result = yield* run(process.execPath, [path.join(dir, "client.ts")], {
        cwd: dir,
        env: { TIMEWHEEL_KEY: key, NODE_EXTRA_CA_CERTS: path.join(server.config.dataDir, "tls", "cert.pem") }
      })
      assert.strictEqual(result.code, 0, result.out)
      const lines = result.out.trim().split("\n")
      const seen = JSON.parse(lines.at(-1)!)
      assert.match(lines[0]!, new RegExp(`^${seen.id} \\d{4}-\\d{2}-\\d{2}T`), "the docs' program prints the id and time")
      assert.strictEqual(lines[1], "registered", "and reads the trigger back")
      assert.deepStrictEqual(seen, {
        id: seen.id,
        status: "registered",
        listed: [seen.id],
        cancelStatus: 204,
        statusAfter: "cancelled",
        missingStatus: 400,
        missingHint: "Must provide either ttr-trigger-id or ttr-custom-key header"
      })
      // what the target would receive: the stored body and Content-Type, as sent
      const stored = yield* server.call("GET", `/jobs/${seen.id}`, { headers: { "ttr-api-key": key } })
      assert.deepStrictEqual([stored.json().body, stored.json().contentType], [
        { encoding: "text", value: `{"hello":"openapi"}`, size: 19 }, "application/json"
      ])
      assert.strictEqual(stored.json().url, `${hooks.origin}/hello`)
    }).pipe(Effect.scoped))

  it.effect("a client call with the docs' bodySerializer delivers bytes as they are: a delivery to the target", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const hooks = yield* target
      const key = yield* server.newKey()
      const document = JSON.parse(yield* cliDocument())
      fs.mkdirSync(path.join(REPO_ROOT, ".tmp"), { recursive: true })
      const dir = fs.mkdtempSync(path.join(REPO_ROOT, ".tmp", "openapi-bytes-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      fs.writeFileSync(path.join(dir, "timewheel.ts"), astToString(yield* Effect.promise(() => openapiTS(document))))
      const port = new URL(server.baseUrl).port
      // the docs' program, due now, and a second call with bytes that are not UTF-8
      const program = typedClientProgram()
        .replace("https://localhost:8443", `https://localhost:${port}`)
        .replace("https://example.com/hooks/hello", `${hooks.origin}/hello`)
        .replace(`"now | add 10s"`, `"now"`)
      const bytes = `
const raw = await timewheel.PUT("/schedule", {
  params: { header: { "ttr-url": "${hooks.origin}/bytes", "ttr-scheduled-at": "now" } },
  headers: { "content-type": "application/octet-stream" },
  body: new Uint8Array([0, 255, 128, 10, 13]),
  bodySerializer: (body) => body
})
console.log(raw.response.status)
`
      fs.writeFileSync(path.join(dir, "client.ts"), program + bytes)
      fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG))
      const typecheck = yield* run(bin("tsc"), ["-p", dir], { cwd: dir })
      assert.strictEqual(typecheck.code, 0, typecheck.out)
      const result = yield* run(process.execPath, [path.join(dir, "client.ts")], {
        cwd: dir,
        env: { TIMEWHEEL_KEY: key, NODE_EXTRA_CA_CERTS: path.join(server.config.dataDir, "tls", "cert.pem") }
      })
      assert.strictEqual(result.code, 0, result.out)
      const [hello] = yield* pollUntil("the JSON body's delivery", Effect.sync(() => (hooks.at("/hello").length === 1 ? hooks.at("/hello") : undefined)))
      assert.strictEqual(hello!.body.toString("utf8"), `{"hello":"openapi"}`)
      assert.strictEqual(hello!.method, "POST")
      const [raw] = yield* pollUntil("the bytes' delivery", Effect.sync(() => (hooks.at("/bytes").length === 1 ? hooks.at("/bytes") : undefined)))
      assert.deepStrictEqual([...raw!.body], [0, 255, 128, 10, 13])
      assert.strictEqual(raw!.method, "PUT")
    }).pipe(Effect.scoped))
})
