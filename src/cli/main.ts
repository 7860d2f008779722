// Entry point of `npm run --silent cli -- <command>`: parses the arguments, runs the command on the
// service's database (DATABASE_URL or the embedded server in DATA_DIR) and prints one result.
// Exit codes: 0 success, 1 usage or failure with one line on stderr.
import "../nodeVersion.ts" // first: before any package loads
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import { MIN_PASSWORD_LENGTH } from "../commands/admins.ts"
import { AppConfig, ConfigError, loadConfig } from "../config.ts"
import { isSpecFailure } from "../domain/errors.ts"
import { type Database, DatabaseLive } from "../store/db.ts"
import {
  adminCreate, CliError, keyCreate, keyList, keyRevoke, keysRotateEncryption, parseLabel, parseOverlapHours, parseQuota, projectCreate, projectSetQuota,
  secretRotate, secretShow
} from "./commands.ts"
import { promptNewPassword } from "./passwordPrompt.ts"

export const USAGE = `usage: npm run --silent cli -- <command>
  project create <name> [--monthly-quota N]
  project set-quota <name> <N>
  project secret show <name>
  project secret rotate <name> [--overlap-hours N]   (default 24: the old secret signs too until then)
  key create <project-name> [--label TEXT]   (what the key is for: shown by key list and the dashboard)
  key list <project-name>
  key revoke <key-id>
  admin create <email> [--password P]      (at a terminal the password is asked twice; else read from stdin)
  keys rotate-encryption                   (seals every stored trigger and replay's headers with the first key of ENCRYPTION_KEYS)
  cron next '<value>' [--from <ISO>] [--count N]
  openapi [--server <url>]                 (the OpenAPI document for client generators, on stdout)`

const usage = (message: string) => Effect.fail(new CliError({ message: `${message}\n${USAGE}` }))

/** Splits `--name value` options from positional arguments. */
const splitArgs = (args: ReadonlyArray<string>) => {
  const positional: Array<string> = []
  const options = new Map<string, string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=")
      if (eq > 0) options.set(arg.slice(2, eq), arg.slice(eq + 1))
      else options.set(arg.slice(2), args[++i] ?? "")
    } else positional.push(arg)
  }
  return { positional, options }
}

const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "")
})

/** The new admin's password: `--password`, else asked twice without echo at a terminal, else stdin's first line. */
const newPassword = (email: string, given: string | undefined) => {
  if (given !== undefined) return Effect.succeed(given)
  if (process.stdin.isTTY !== true) return readStdin
  return Effect.tryPromise({
    try: () => promptNewPassword(email, MIN_PASSWORD_LENGTH, process.stdin, process.stderr),
    catch: (error) => new CliError({ message: error instanceof Error ? error.message : String(error) })
  })
}

/**
 * The database commands; `undefined` when the arguments name none of them. The outer effect checks
 * the arguments (and reads stdin) without a database; it yields the command to run on the database,
 * so a usage error never waits for, or is hidden by, a database connection.
 */
type DatabaseCommand = Effect.Effect<string, unknown, AppConfig | Database>

const databaseCommand = (args: ReadonlyArray<string>): Effect.Effect<DatabaseCommand, CliError> | undefined => {
  const { positional, options } = splitArgs(args)
  const [group, action, first, second] = positional
  const expect = (count: number, shape: string) =>
    positional.length === count ? Effect.void : usage(`${group} ${action} expects ${shape}`)
  switch (`${group} ${action}`) {
    case "project create":
      return Effect.gen(function*() {
        yield* expect(3, "<name>")
        const quota = options.has("monthly-quota") ? yield* parseQuota(options.get("monthly-quota")) : undefined
        return projectCreate(first!, quota)
      })
    case "project set-quota":
      return Effect.gen(function*() {
        yield* expect(4, "<name> <N>")
        const quota = yield* parseQuota(second)
        return projectSetQuota(first!, quota)
      })
    case "project secret":
      return Effect.gen(function*() {
        if (first === "show") {
          yield* expect(4, "show <name>")
          return secretShow(second!)
        }
        if (first === "rotate") {
          yield* expect(4, "rotate <name>")
          const overlap = options.has("overlap-hours") ? yield* parseOverlapHours(options.get("overlap-hours")) : undefined
          return secretRotate(second!, overlap)
        }
        return yield* usage(`project secret expects show <name> or rotate <name>`)
      })
    case "key create":
      return Effect.gen(function*() {
        yield* expect(3, "<project-name>")
        return keyCreate(first!, yield* parseLabel(options.get("label")))
      })
    case "key list":
      return Effect.map(expect(3, "<project-name>"), () => keyList(first!))
    case "key revoke":
      return Effect.map(expect(3, "<key-id>"), () => keyRevoke(first!))
    case "keys rotate-encryption":
      return Effect.map(expect(2, "no argument"), (): DatabaseCommand =>
        Effect.gen(function*() {
          return yield* keysRotateEncryption((yield* AppConfig).encryptionKeys)
        }))
    case "admin create":
      return Effect.gen(function*() {
        yield* expect(3, "<email>")
        return adminCreate(first!, yield* newPassword(first!, options.get("password")))
      })
    default:
      return undefined
  }
}

/** A one-line description of an unexpected failure, with the Postgres text for SQL errors. */
const describeFailure = (error: unknown): string => {
  const cause = (error as { reason?: { cause?: unknown } })?.reason?.cause
  if (cause instanceof Error) return cause.message
  return error instanceof Error ? error.message : String(error)
}

export const runCli = async (args: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>>) => {
  const out = (text: string) => text === "" || process.stdout.write(text.endsWith("\n") ? text : text + "\n")
  const err = (text: string) => process.stderr.write(text.split("\n")[0] + "\n")
  if (args[0] === "cron" && args[1] === "next") {
    const { cronNext } = await import("./cronNext.ts")
    const result = cronNext(args.slice(2), Date.now()) // the CLI's "now" is the wall clock by definition
    if (result.exitCode === 0) out(result.stdout)
    else err(result.stderr)
    return result.exitCode
  }
  if (args[0] === "openapi") {
    const { openApiCommand } = await import("./openapi.ts")
    let result
    try {
      result = openApiCommand(args.slice(1), loadConfig(env))
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error
      result = { exitCode: 1 as const, stderr: error.message }
    }
    if (result.exitCode === 0) out(result.stdout)
    else err(result.stderr)
    return result.exitCode
  }
  const command = databaseCommand(args)
  if (command === undefined) {
    process.stderr.write((args.length === 0 ? "" : `unknown command: ${args.join(" ")}\n`) + USAGE + "\n")
    return 1
  }
  /** Prints the one-line message of a failure; the exit code. */
  const failed = (cause: Cause.Cause<unknown>): 1 => {
    const failure = Cause.findErrorOption(cause)
    if (failure._tag === "Some" && (failure.value instanceof CliError || isSpecFailure(failure.value))) err(failure.value.message)
    else err(`failed: ${describeFailure(Cause.squash(cause))}`)
    return 1
  }
  const checked = await Effect.runPromiseExit(command)
  if (!Exit.isSuccess(checked)) return failed(checked.cause)
  let config
  try {
    config = loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) {
      err(error.message)
      return 1
    }
    throw error
  }
  const program = checked.value.pipe(
    Effect.provide(DatabaseLive(config, { applicationName: "timewheel-cli", maxConnections: 2 })),
    Effect.provideService(AppConfig, config),
    Effect.provideService(References.MinimumLogLevel, "None"),
    Effect.provide(Logger.layer([]))
  )
  const exit = await Effect.runPromiseExit(program)
  if (!Exit.isSuccess(exit)) return failed(exit.cause)
  out(exit.value)
  return 0
}

if (import.meta.main) {
  // exits once stdout is written out: to a pipe it is written asynchronously, and a long answer
  // (the OpenAPI document) was cut by an exit right after the write
  runCli(process.argv.slice(2), process.env).then((code) => process.stdout.write("", () => process.exit(code)))
}
