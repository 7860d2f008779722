// The operator CLI as the README runs it (`npm run --silent cli -- …`, a child process per command):
// what each command prints, what it stores, its exit codes and one-line errors (docs/settings.md
// "CLI"); then the embedded database: the CLI alone on a DATA_DIR, and beside a
// running service on the same DATA_DIR.
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { request } from "undici"
import { hashApiKey } from "../../src/domain/auth/apiKey.ts"
import { verifyPassword } from "../../src/domain/auth/password.ts"
import { apiKeysFindProject } from "../../src/store/apiKeys.ts"
import { type CliResult, postgresProcessesOf, programLines, runCli, startService } from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insecureAgent } from "../support/server.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const KEY = /^ttr_[0-9a-f]{48}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The settings every CLI child of the database tests gets: DATABASE_URL of a fresh database. */
class CliEnv extends Context.Service<CliEnv, { readonly DATABASE_URL: string }>()("test/CliEnv") {}

const CliDatabase = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabaseUrl
  return Layer.merge(
    Layer.succeed(CliEnv)({ DATABASE_URL: url }),
    PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })
  )
}))

const cli = (args: ReadonlyArray<string>, stdin?: string) =>
  Effect.gen(function*() {
    const env = yield* CliEnv
    return yield* Effect.promise(() => runCli(args, stdin === undefined ? { env } : { env, stdin }))
  })

/** A successful command: exit 0, nothing on stderr, and the single stdout line. */
const succeeds = (result: CliResult): string => {
  assert.deepStrictEqual({ code: result.code, stderr: result.stderr }, { code: 0, stderr: "" }, result.stdout)
  assert.match(result.stdout, /^[^\n]*\n$/)
  return result.stdout.slice(0, -1)
}

/** A failed command: exit 1, nothing on stdout, exactly this one line on stderr. */
const failsWith = (result: CliResult, message: string) =>
  assert.deepStrictEqual(result, { code: 1, stdout: "", stderr: message + "\n" })

const query = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(text, params)
  })

/** Tests that run several CLI children one after another: generous for a loaded 2-core machine. */
const SPAWNS_TIMEOUT = 180_000

const sha256 = (text: string) => crypto.createHash("sha256").update(text).digest()

layer(CliDatabase, { timeout: "120 seconds" })("cli on DATABASE_URL", (it) => {
  describe("project", () => {
    it.effect("create prints only the new project's id; the project exists with the default quota", () =>
      Effect.gen(function*() {
        const id = succeeds(yield* cli(["project", "create", "alpha"]))
        assert.match(id, UUID)
        const rows = yield* query<{ id: string; monthly_quota: string }>(
          "SELECT id::text, monthly_quota::text FROM projects WHERE name = $1", ["alpha"]
        )
        assert.deepStrictEqual(rows, [{ id, monthly_quota: "1000000" }])
        failsWith(yield* cli(["project", "create", "alpha"]), `a project named "alpha" already exists`)
        assert.strictEqual((yield* query("SELECT 1 FROM projects WHERE name = $1", ["alpha"])).length, 1)
      }), SPAWNS_TIMEOUT)

    it.effect("--monthly-quota sets the quota; set-quota changes it; an unknown project fails", () =>
      Effect.gen(function*() {
        const quotaOf = (name: string) =>
          Effect.map(query<{ q: string }>("SELECT monthly_quota::text AS q FROM projects WHERE name = $1", [name]), (rows) => rows.map((row) => row.q))
        assert.match(succeeds(yield* cli(["project", "create", "beta", "--monthly-quota", "500"])), UUID)
        assert.deepStrictEqual(yield* quotaOf("beta"), ["500"])
        assert.match(succeeds(yield* cli(["project", "create", "gamma", "--monthly-quota=0"])), UUID)
        assert.deepStrictEqual(yield* quotaOf("gamma"), ["0"])
        assert.strictEqual(succeeds(yield* cli(["project", "set-quota", "beta", "42"])), `monthly quota of "beta" set to 42`)
        assert.deepStrictEqual(yield* quotaOf("beta"), ["42"])
        failsWith(yield* cli(["project", "set-quota", "nope", "42"]), `no project named "nope"`)
      }), SPAWNS_TIMEOUT)

    it.effect("secret show prints the signing secret alone; rotate prints a new one, the old one signing for the overlap", () =>
      Effect.gen(function*() {
        const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/ // Standard Webhooks: base64 of 32 bytes
        const secretsOf = (name: string) =>
          Effect.map(query<{ current: string; previous: string | null; overlap_h: string | null }>(
            `SELECT signing_secret AS current, previous_signing_secret AS previous,
              round(extract(epoch FROM previous_signing_secret_until - updated_at) / 3600)::text AS overlap_h
            FROM projects WHERE name = $1`, [name]
          ), (rows) => rows[0]!)
        succeeds(yield* cli(["project", "create", "signed"]))
        const first = succeeds(yield* cli(["project", "secret", "show", "signed"]))
        assert.match(first, SECRET)
        assert.deepStrictEqual(yield* secretsOf("signed"), { current: first, previous: null, overlap_h: null })
        const second = succeeds(yield* cli(["project", "secret", "rotate", "signed"]))
        assert.match(second, SECRET)
        assert.notStrictEqual(second, first)
        assert.strictEqual(succeeds(yield* cli(["project", "secret", "show", "signed"])), second)
        assert.deepStrictEqual(yield* secretsOf("signed"), { current: second, previous: first, overlap_h: "24" })
        const third = succeeds(yield* cli(["project", "secret", "rotate", "signed", "--overlap-hours", "0"]))
        assert.deepStrictEqual(yield* secretsOf("signed"), { current: third, previous: null, overlap_h: null })
        failsWith(yield* cli(["project", "secret", "show", "nope"]), `no project named "nope"`)
        failsWith(yield* cli(["project", "secret", "rotate", "nope"]), `no project named "nope"`)
        failsWith(
          yield* cli(["project", "secret", "rotate", "signed", "--overlap-hours", "721"]),
          `--overlap-hours must be a whole number from 0 to 720, got "721"`
        )
        failsWith(yield* cli(["project", "secret", "print", "signed"]), "project secret expects show <name> or rotate <name>")
      }), SPAWNS_TIMEOUT)
  })

  describe("key", () => {
    it.effect("create prints only the key; only its SHA-256 is stored and it authenticates", () =>
      Effect.gen(function*() {
        const projectId = succeeds(yield* cli(["project", "create", "keys"]))
        const key = succeeds(yield* cli(["key", "create", "keys"]))
        assert.match(key, KEY)
        const rows = yield* query<{ project_id: string; key_hint: string; revoked_at: Date | null }>(
          "SELECT project_id::text, key_hint, revoked_at FROM api_keys WHERE key_hash = $1", [sha256(key)]
        )
        assert.deepStrictEqual(rows, [{ project_id: projectId, key_hint: `ttr_…${key.slice(-4)}`, revoked_at: null }])
        // the lookup authentication does
        assert.strictEqual(yield* apiKeysFindProject(hashApiKey(key)), projectId)
        // the clear key (or its random part) is in no row of any table
        const tables = yield* query<{ name: string }>(
          "SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        assert.include(tables.map((table) => table.name), "api_keys")
        for (const { name } of tables) {
          const hits = yield* query<{ n: string }>(`SELECT count(*)::text AS n FROM ${name} t WHERE t::text LIKE $1`, [`%${key.slice(4)}%`])
          assert.deepStrictEqual(hits, [{ n: "0" }], `table ${name} holds the clear key`)
        }
      }), SPAWNS_TIMEOUT)

    it.effect("list shows every key; revoke marks it revoked and it no longer authenticates", () =>
      Effect.gen(function*() {
        succeeds(yield* cli(["project", "create", "listed"]))
        assert.deepStrictEqual(yield* cli(["key", "list", "listed"]), { code: 0, stdout: "", stderr: "" })
        const first = succeeds(yield* cli(["key", "create", "listed"]))
        const second = succeeds(yield* cli(["key", "create", "listed"]))
        const ids = (yield* query<{ id: string }>(
          "SELECT id::text FROM api_keys WHERE key_hash IN ($1, $2) ORDER BY created_at, id", [sha256(first), sha256(second)]
        )).map((row) => row.id)
        assert.strictEqual(ids.length, 2)

        const list = (result: CliResult) => {
          assert.strictEqual(result.code, 0)
          assert.strictEqual(result.stderr, "")
          return result.stdout.trimEnd().split("\n").map((line) => line.split("\t"))
        }
        const before = list(yield* cli(["key", "list", "listed"]))
        assert.deepStrictEqual(before.map(([id, hint, , state]) => [id, hint, state]), [
          [ids[0], `ttr_…${first.slice(-4)}`, "active"],
          [ids[1], `ttr_…${second.slice(-4)}`, "active"]
        ])
        for (const [, , createdAt] of before) assert.match(createdAt!, ISO)

        assert.strictEqual(succeeds(yield* cli(["key", "revoke", ids[0]!])), `key ${ids[0]} revoked`)
        const after = list(yield* cli(["key", "list", "listed"]))
        assert.match(after[0]![3]!, /^revoked \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        assert.strictEqual(after[1]![3], "active")
        assert.strictEqual(yield* apiKeysFindProject(hashApiKey(first)), undefined)
        assert.isString(yield* apiKeysFindProject(hashApiKey(second)))

        failsWith(yield* cli(["key", "revoke", ids[0]!]), `no active key with id "${ids[0]}"`)
        failsWith(yield* cli(["key", "revoke", "01a20000-0000-7000-8000-000000000000"]), `no active key with id "01a20000-0000-7000-8000-000000000000"`)
        failsWith(yield* cli(["key", "revoke", "not-a-uuid"]), `no active key with id "not-a-uuid"`)
        failsWith(yield* cli(["key", "create", "nope"]), `no project named "nope"`)
        failsWith(yield* cli(["key", "list", "nope"]), `no project named "nope"`)
      }), SPAWNS_TIMEOUT)

    it.effect("create --label labels the key; list shows the label last (empty without one); a bad label creates nothing", () =>
      Effect.gen(function*() {
        succeeds(yield* cli(["project", "create", "labelled"]))
        const billing = succeeds(yield* cli(["key", "create", "labelled", "--label", "  billing worker (prod)  "]))
        assert.match(billing, KEY)
        const plain = succeeds(yield* cli(["key", "create", "labelled"]))
        const listing = () => Effect.map(cli(["key", "list", "labelled"]), (result) => {
          assert.deepStrictEqual({ code: result.code, stderr: result.stderr }, { code: 0, stderr: "" })
          return result.stdout.replace(/\n$/, "").split("\n").map((line) => line.split("\t"))
        })
        const lines = yield* listing()
        assert.deepStrictEqual(lines.map((fields) => [fields[1], fields[4]]), [
          [`ttr_…${billing.slice(-4)}`, "billing worker (prod)"],
          [`ttr_…${plain.slice(-4)}`, ""]
        ])
        const stored = yield* query<{ label: string | null }>("SELECT label FROM api_keys WHERE key_hash = $1", [sha256(plain)])
        assert.deepStrictEqual(stored, [{ label: null }])
        failsWith(yield* cli(["key", "create", "labelled", "--label", "x".repeat(101)]), "--label: label must be at most 100 characters")
        failsWith(yield* cli(["key", "create", "labelled", "--label", "a\tb"]), "--label: label must not contain control characters or unpaired surrogates")
        assert.strictEqual((yield* listing()).length, 2)
      }), SPAWNS_TIMEOUT)
  })

  describe("admin", () => {
    it.effect("create takes the password from stdin or --password and stores only its scrypt hash", () =>
      Effect.gen(function*() {
        const hashOf = (email: string) =>
          Effect.map(query<{ h: string }>("SELECT password_hash AS h FROM admins WHERE email = $1", [email]), (rows) => rows[0]?.h ?? "")

        assert.strictEqual(succeeds(yield* cli(["admin", "create", "ops@example.com"], "correct horse battery\n")), "admin ops@example.com created")
        const fromStdin = yield* hashOf("ops@example.com")
        assert.match(fromStdin, /^scrypt\$/)
        assert.isTrue(verifyPassword("correct horse battery", fromStdin))
        assert.isFalse(verifyPassword("correct horse battery\n", fromStdin))

        assert.strictEqual(succeeds(yield* cli(["admin", "create", "dev@example.com", "--password", "s3cret-enough"])), "admin dev@example.com created")
        const fromOption = yield* hashOf("dev@example.com")
        assert.notInclude(fromOption, "s3cret-enough")
        assert.isTrue(verifyPassword("s3cret-enough", fromOption))

        failsWith(yield* cli(["admin", "create", "ops@example.com", "--password", "another-one"]), `an admin with e-mail "ops@example.com" already exists`)
        failsWith(yield* cli(["admin", "create", "new@example.com"]), "the password must have at least 8 characters")
        failsWith(yield* cli(["admin", "create", "not-an-email", "--password", "long-enough"]), `"not-an-email" is not an e-mail address`)
        assert.strictEqual((yield* query("SELECT 1 FROM admins")).length, 2)
      }), SPAWNS_TIMEOUT)
  })
})

describe.concurrent("bad usage → exit 1 before touching a database", () => {
  // an unreachable DATABASE_URL: these must fail on their arguments alone
  const env = { DATABASE_URL: "postgres://postgres@127.0.0.1:1/none" }
  const oneLine: ReadonlyArray<[ReadonlyArray<string>, string]> = [
    [["project", "create"], "project create expects <name>"],
    [["project", "create", "a", "--monthly-quota", "-3"], `the monthly quota must be a whole number ≥ 0, got "-3"`],
    [["project", "set-quota", "a", "ten"], `the monthly quota must be a whole number ≥ 0, got "ten"`],
    [["key", "list", "a", "b"], "key list expects <project-name>"],
    [["key", "revoke"], "key revoke expects <key-id>"],
    [["admin", "create"], "admin create expects <email>"]
  ]
  for (const [args, message] of oneLine) {
    it(`${args.join(" ")} → ${message}`, { timeout: 60_000 }, async () => {
      failsWith(await runCli(args, { env }), message)
    })
  }

  const unknown: ReadonlyArray<[ReadonlyArray<string>, string | undefined]> = [
    [[], undefined],
    [["deploy"], "unknown command: deploy"],
    [["project", "delete", "a"], "unknown command: project delete a"]
  ]
  for (const [args, first] of unknown) {
    it(`${args.length === 0 ? "no command" : args.join(" ")} → usage`, { timeout: 60_000 }, async () => {
      const result = await runCli(args, { env })
      assert.strictEqual(result.code, 1)
      assert.strictEqual(result.stdout, "")
      const lines = programLines(result.stderr)
      if (first !== undefined) assert.strictEqual(lines.shift(), first)
      assert.strictEqual(lines[0], "usage: npm run --silent cli -- <command>")
      assert.include(result.stderr, "key revoke <key-id>")
    })
  }
})

describe("cli on an embedded DATA_DIR (no DATABASE_URL)", () => {
  it("without a service: starts PostgreSQL in DATA_DIR/pg for each command and stops it after", { timeout: 180_000 }, async () => {
    const dataDir = makeTempDir("cli-alone")
    try {
      const env = { DATA_DIR: dataDir }
      const id = succeeds(await runCli(["project", "create", "solo"], { env, timeoutMs: 90_000 }))
      assert.match(id, UUID)
      assert.isTrue(fs.existsSync(path.join(dataDir, "pg", "PG_VERSION")))
      assert.deepStrictEqual(postgresProcessesOf(dataDir), [])
      assert.isFalse(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid")))

      const key = succeeds(await runCli(["key", "create", "solo"], { env, timeoutMs: 90_000 }))
      assert.match(key, KEY)
      const listed = succeeds(await runCli(["key", "list", "solo"], { env, timeoutMs: 90_000 }))
      assert.include(listed, `ttr_…${key.slice(-4)}\t`)
      assert.deepStrictEqual(postgresProcessesOf(dataDir), [])
    } finally {
      for (const pid of postgresProcessesOf(dataDir)) process.kill(pid, "SIGKILL")
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it("beside a running service: joins its PostgreSQL, leaves it running, and the service sees the key", { timeout: 180_000 }, async () => {
    const dataDir = makeTempDir("cli-joins")
    const service = await startService({ DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", SHARDS: "8" })
    try {
      const servers = postgresProcessesOf(dataDir)
      assert.isAbove(servers.length, 0)
      const env = { DATA_DIR: dataDir }
      succeeds(await runCli(["project", "create", "shared"], { env, timeoutMs: 90_000 }))
      const key = succeeds(await runCli(["key", "create", "shared"], { env, timeoutMs: 90_000 }))
      // the same server processes, still running after the CLI exited
      assert.includeMembers(postgresProcessesOf(dataDir), servers)
      const response = await request(`${service.baseUrl}/health`, { dispatcher: insecureAgent, headers: { "ttr-api-key": key } })
      const body = await response.body.json() as { status: string }
      assert.strictEqual(response.statusCode, 200)
      assert.strictEqual(body.status, "ok")
      assert.strictEqual(await service.stop(), 0)
      assert.deepStrictEqual(postgresProcessesOf(dataDir), [])
    } finally {
      service.kill()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
