// `admin create` at a real terminal (docs/settings.md "CLI"): the README's command run under a
// pseudo-terminal (util-linux `script`, which gives the CLI a TTY as a person's shell does) asks for
// the password twice, echoes none of it, asks again after a short or differing answer, and gives up on
// Ctrl-C; the admin it creates signs in with that password. Piped stdin and --password stay covered by
// cli.test.ts.
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { verifyPassword } from "../../src/domain/auth/password.ts"
import { childEnv, REPO_ROOT } from "../support/cli.ts"
import { freshDatabaseUrl } from "../support/database.ts"

class CliEnv extends Context.Service<CliEnv, { readonly DATABASE_URL: string }>()("test/CliEnv") {}

const CliDatabase = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabaseUrl
  return Layer.merge(Layer.succeed(CliEnv)({ DATABASE_URL: url }), PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
}))

/** What is typed after a prompt appears: [text the screen must show first, keys to type]. */
type Script = ReadonlyArray<readonly [waitFor: string, keys: string]>

/**
 * Runs `npm run --silent cli -- <args>` on a pseudo-terminal, typing each answer once its prompt is
 * on the screen; the exit code and everything the terminal showed.
 */
const atTerminal = (args: ReadonlyArray<string>, script: Script) =>
  Effect.flatMap(CliEnv, (env) =>
    Effect.promise(() =>
      new Promise<{ readonly code: number | null; readonly screen: string }>((resolve, reject) => {
        const command = ["npm", "run", "--silent", "cli", "--", ...args].join(" ")
        const child = spawn("script", ["-qefc", command, "/dev/null"], { cwd: REPO_ROOT, env: childEnv(env), stdio: ["pipe", "pipe", "pipe"] })
        let screen = ""
        let step = 0
        let typedAt = 0
        const timer = setTimeout(() => {
          child.kill("SIGKILL")
          reject(new Error(`no answer within 120 s; the screen:\n${screen}`))
        }, 120_000)
        const onOutput = (chunk: string) => {
          screen += chunk
          // each prompt is waited for after the text typed so far, so a repeated prompt counts once per answer
          while (step < script.length && screen.indexOf(script[step]![0], typedAt) >= 0) {
            typedAt = screen.length
            child.stdin.write(script[step]![1])
            step++
          }
        }
        child.stdout.setEncoding("utf8").on("data", onOutput)
        child.stderr.setEncoding("utf8").on("data", onOutput)
        child.on("close", (code) => {
          clearTimeout(timer)
          resolve({ code, screen })
        })
      })))

const PROMPT = "Password for"
const REPEAT = "Repeat the password: "

const passwordOf = (email: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ password_hash: string }>`SELECT password_hash FROM admins WHERE email = ${email}`)

layer(CliDatabase, { timeout: "300 seconds" })("admin create at a terminal", (it) => {
  it.effect("asks twice without echo; the admin signs in with that password", () =>
    Effect.gen(function*() {
      const password = "correct-horse-42"
      const { code, screen } = yield* atTerminal(["admin", "create", "tty@example.com"], [
        [PROMPT, `${password}\r`],
        [REPEAT, `${password}\r`]
      ])
      assert.strictEqual(code, 0, screen)
      assert.include(screen, "Password for tty@example.com (at least 8 characters): ")
      assert.include(screen, REPEAT)
      assert.include(screen, "admin tty@example.com created")
      assert.notInclude(screen, password, "the password is never echoed")
      assert.notInclude(screen, "*", "not even as stars")
      const [row] = yield* passwordOf("tty@example.com")
      assert.isTrue(verifyPassword(password, row!.password_hash))
    }))

  it.effect("a short password or two different answers are asked again; backspace erases", () =>
    Effect.gen(function*() {
      const { code, screen } = yield* atTerminal(["admin", "create", "again@example.com"], [
        [PROMPT, "short\r"],
        [PROMPT, "first-answer\r"],
        [REPEAT, "other-answer\r"],
        [PROMPT, "final-answerX\u007f\r"],
        [REPEAT, "final-answer\r"]
      ])
      assert.strictEqual(code, 0, screen)
      assert.include(screen, "the password must have at least 8 characters: try again")
      assert.include(screen, "the two passwords differ: try again")
      for (const typed of ["short", "first-answer", "other-answer", "final-answer"]) assert.notInclude(screen, typed)
      const [row] = yield* passwordOf("again@example.com")
      assert.isTrue(verifyPassword("final-answer", row!.password_hash))
    }))

  it.effect("Ctrl-C gives up: exit 1, one line, no admin", () =>
    Effect.gen(function*() {
      const { code, screen } = yield* atTerminal(["admin", "create", "quit@example.com"], [[PROMPT, "abc\u0003"]])
      assert.strictEqual(code, 1, screen)
      assert.include(screen, "no password given")
      assert.deepStrictEqual(yield* passwordOf("quit@example.com"), [])
    }))
})
