// A start-up that fails (docs/operations.md "Starting") ends with one line on stderr saying what to do,
// never a stack trace: the address is taken (another timewheel on this port?), the port needs
// privileges, the database cannot be used (DATABASE_URL, or the embedded server in DATA_DIR), stored
// triggers are sealed with an encryption key the settings lack (its own line), or else the innermost
// error's message. main.ts prints it and exits with 1.
import type { AppConfigShape } from "./config.ts"
import { EncryptionKeysMissing } from "./domain/sealing.ts"

/** The innermost error of a chain of `cause`s. */
const rootOf = (error: unknown): unknown => {
  let current = error
  for (let depth = 0; depth < 10; depth++) {
    const inner = (current as { readonly cause?: unknown } | null)?.cause
    if (inner === undefined || inner === null || inner === current) break
    current = inner
  }
  return current
}

const messageOf = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).split("\n", 1)[0]!.trim()

/** Whether any error of the chain is one of @effect/sql's. */
const isSqlFailure = (error: unknown): boolean => {
  let current = error
  for (let depth = 0; depth < 10 && current !== undefined && current !== null; depth++) {
    if (/SqlError/.test(String((current as { readonly _tag?: unknown })._tag ?? "")) || (current as Error).name?.includes("SqlError")) return true
    current = (current as { readonly cause?: unknown }).cause
  }
  return false
}

/** The database a failure is about, without its password. */
const databaseName = (config: Pick<AppConfigShape, "databaseUrl" | "dataDir">): string => {
  if (config.databaseUrl === undefined) return `the embedded PostgreSQL in ${config.dataDir}/pg`
  try {
    const url = new URL(config.databaseUrl)
    url.password = ""
    return `DATABASE_URL ${url.toString()}`
  } catch {
    return "DATABASE_URL"
  }
}

/** The one line for a failure before the service listened. */
export const startupFailureLine = (error: unknown, config: Pick<AppConfigShape, "host" | "port" | "opsHost" | "opsPort" | "databaseUrl" | "dataDir">): string => {
  const root = rootOf(error) as { readonly code?: unknown; readonly port?: unknown; readonly address?: unknown }
  const port = typeof root.port === "number" ? root.port : undefined
  const setting = port !== undefined && port === config.opsPort && port !== config.port ? "OPS_PORT" : "PORT"
  const where = port === undefined ? `${config.host}:${config.port}` : `${String(root.address ?? config.host)}:${port}`
  if (root.code === "EADDRINUSE") {
    return `cannot listen on ${where}: the address is in use (is timewheel already running here? stop it, or start this one with another ${setting})`
  }
  if (root.code === "EACCES") {
    return `cannot listen on ${where}: permission denied (ports below 1024 need privileges): set ${setting} to 1024 or above`
  }
  if (root.code === "EADDRNOTAVAIL") return `cannot listen on ${where}: no such address on this machine: check HOST`
  if (root instanceof EncryptionKeysMissing) return root.message
  if (isSqlFailure(error)) return `cannot use ${databaseName(config)}: ${messageOf(root)}`
  return `cannot start: ${messageOf(root)}`
}
