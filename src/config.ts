// Operator settings (docs/settings.md "Settings"): read once from the environment,
// defaults in one object, every bad value reported as one line naming the setting.
import * as Context from "effect/Context"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Keyring, parseEncryptionKeys } from "./domain/sealing.ts"

export const DEFAULTS = {
  DATABASE_URL: undefined,
  DATA_DIR: "./data",
  HOST: "0.0.0.0",
  PORT: 8443,
  TLS_CERT_FILE: undefined,
  TLS_KEY_FILE: undefined,
  PREFIX: "ttr",
  SHARDS: 64,
  DEFAULT_MONTHLY_QUOTA: 1_000_000,
  BLOCK_PRIVATE_TARGETS: false,
  LOG_LEVEL: "info",
  LOG_FORMAT: "text",
  MAX_IN_FLIGHT: 256,
  DRAIN_TIMEOUT_SECONDS: 30,
  OPS_HOST: "127.0.0.1",
  OPS_PORT: 9464,
  RETENTION_DAYS: 30,
  RETENTION_BUSY_PERCENT: 10,
  SESSION_IDLE_MINUTES: 30,
  SESSION_MAX_HOURS: 12,
  SMTP_URL: undefined,
  SMTP_FROM: "timewheel <timewheel@localhost>",
  ENCRYPTION_KEYS: undefined,
  OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
  OTEL_SERVICE_NAME: "timewheel",
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: undefined,
  OTEL_EXPORTER_OTLP_HEADERS: undefined,
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: undefined,
  OTEL_BSP_SCHEDULE_DELAY: 5000,
  OTEL_SDK_DISABLED: false
} as const

export const LOG_LEVELS = ["all", "trace", "debug", "info", "warn", "error", "fatal", "none"] as const
export type LogLevelName = (typeof LOG_LEVELS)[number]

export const LOG_FORMATS = ["text", "json"] as const
export type LogFormatName = (typeof LOG_FORMATS)[number]

export interface TlsFiles {
  readonly cert: string
  readonly key: string
}

/** Where and how spans are exported (OpenTelemetry's environment, OTLP over HTTP). */
export interface TracingSettings {
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  readonly url: string
  readonly serviceName: string
  readonly protocol: "http/protobuf" | "http/json"
  /** OTEL_EXPORTER_OTLP_HEADERS (`name=value,…`, values URL-decoded), e.g. a vendor's key. */
  readonly headers: Readonly<Record<string, string>>
  /** OTEL_BSP_SCHEDULE_DELAY: how often a batch of ended spans is sent. */
  readonly exportIntervalMs: number
}

export interface AppConfigShape {
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly host: string
  readonly port: number
  /** PEM contents read from TLS_CERT_FILE / TLS_KEY_FILE; undefined means "generate a self-signed one". */
  readonly tls: TlsFiles | undefined
  readonly prefix: string
  readonly shards: number
  readonly defaultMonthlyQuota: number
  readonly blockPrivateTargets: boolean
  readonly logLevel: LogLevelName
  /** `text`: one human-readable (logfmt) line per event; `json`: one JSON object per line, with the node id. */
  readonly logFormat: LogFormatName
  readonly maxInFlight: number
  /** How long a stopping node may take to finish and record the deliveries it holds. */
  readonly drainTimeoutSeconds: number
  /** Address of the plain-HTTP ops listener (/metrics, /livez, /readyz). */
  readonly opsHost: string
  /** Its port (0: a free one); null when OPS_PORT is `off`. */
  readonly opsPort: number | null
  /**
   * Whether OPS_PORT was set: then failing to listen stops the start, like PORT; the default port
   * already taken (several nodes on one host) only leaves this node without an ops listener.
   */
  readonly opsPortRequired: boolean
  /** Executions are dropped by whole days this many days old, finished triggers deleted this many days after they last changed; 0 keeps them. */
  readonly retentionDays: number
  /** Share of the time retention's batches of deletes may keep the database busy, in percent. */
  readonly retentionBusyPercent: number
  /** A dashboard session unused this long ends. */
  readonly sessionIdleMinutes: number
  /** A dashboard session ends this long after sign-in, used or not. */
  readonly sessionMaxHours: number
  /** smtp:// or smtps:// URL of the server sending alert e-mails; undefined: no e-mail alerts. */
  readonly smtpUrl: string | undefined
  /** The From of alert e-mails. */
  readonly smtpFrom: string
  /** ENCRYPTION_KEYS: the keys sealing stored headers and bodies (the first writes); null: stored plain. */
  readonly encryptionKeys: Keyring | null
  /** Tracing: on when an OTLP endpoint is set (and OTEL_SDK_DISABLED is not true); null: off. */
  readonly tracing: TracingSettings | null
}

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("timewheel/AppConfig") {}

/** A bad setting: the message is the single line printed before exiting with code 1. */
export class ConfigError extends Error {
  override readonly name = "ConfigError"
}

type Env = Readonly<Record<string, string | undefined>>

const setting = (env: Env, name: string): string | undefined => {
  const value = env[name]
  return value === undefined || value.trim() === "" ? undefined : value.trim()
}

const integer = (env: Env, name: string, fallback: number, min: number, max: number): number => {
  const raw = setting(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`)
  }
  return Number(raw)
}

const boolean = (env: Env, name: string, fallback: boolean): boolean => {
  const raw = setting(env, name)
  if (raw === undefined) return fallback
  if (raw === "true") return true
  if (raw === "false") return false
  throw new ConfigError(`${name} must be "true" or "false", got "${raw}"`)
}

const opsPort = (env: Env): number | null => {
  const raw = setting(env, "OPS_PORT")
  if (raw === undefined) return DEFAULTS.OPS_PORT
  if (raw === "off") return null
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError(`OPS_PORT must be an integer between 0 and 65535 or "off", got "${raw}"`)
  }
  return Number(raw)
}

const databaseUrl = (env: Env): string | undefined => {
  const raw = setting(env, "DATABASE_URL")
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(`DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)`)
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new ConfigError(`DATABASE_URL must start with postgres:// or postgresql://, got "${url.protocol}//"`)
  }
  if (url.hostname === "") throw new ConfigError(`DATABASE_URL has no host`)
  return raw
}

const smtpUrl = (env: Env): string | undefined => {
  const raw = setting(env, "SMTP_URL")
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(`SMTP_URL is not a valid URL (expected smtp://user:password@host:port or smtps://…)`)
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") {
    throw new ConfigError(`SMTP_URL must start with smtp:// or smtps://, got "${raw}"`)
  }
  if (url.hostname === "") throw new ConfigError(`SMTP_URL has no host`)
  return raw
}

const smtpFrom = (env: Env): string => {
  const raw = setting(env, "SMTP_FROM") ?? DEFAULTS.SMTP_FROM
  if (!/^[^\s@<>]+@[^\s@<>]+$|^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(raw)) {
    throw new ConfigError(`SMTP_FROM must be an e-mail address or "Name <address>", got "${raw}"`)
  }
  return raw
}

const encryptionKeys = (env: Env): Keyring | null => {
  const raw = setting(env, "ENCRYPTION_KEYS")
  if (raw === undefined) return null
  const keyring = parseEncryptionKeys(raw)
  if (typeof keyring === "string") throw new ConfigError(`ENCRYPTION_KEYS: ${keyring}`)
  return keyring
}

const httpUrl = (name: string, raw: string): URL => {
  let url: URL | undefined
  try {
    url = new URL(raw)
  } catch {
    // reported below
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new ConfigError(`${name} must be an http:// or https:// URL, got "${raw}"`)
  }
  return url
}

const otlpHeaders = (raw: string | undefined): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const entry of (raw ?? "").split(",").map((part) => part.trim()).filter((part) => part !== "")) {
    const eq = entry.indexOf("=")
    if (eq <= 0) throw new ConfigError(`OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas, got "${entry}"`)
    headers[entry.slice(0, eq).trim()] = decodeURIComponent(entry.slice(eq + 1).trim())
  }
  return headers
}

const tracing = (env: Env): TracingSettings | null => {
  if (boolean(env, "OTEL_SDK_DISABLED", DEFAULTS.OTEL_SDK_DISABLED)) return null
  const tracesEndpoint = setting(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
  const endpoint = setting(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
  let url: string
  if (tracesEndpoint !== undefined) url = httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracesEndpoint).toString()
  else if (endpoint !== undefined) {
    const base = httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    base.pathname = `${base.pathname.replace(/\/$/, "")}/v1/traces`
    url = base.toString()
  } else return null
  const protocol = setting(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? setting(env, "OTEL_EXPORTER_OTLP_PROTOCOL") ??
    DEFAULTS.OTEL_EXPORTER_OTLP_PROTOCOL
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL must be "http/protobuf" or "http/json" (grpc is not supported), got "${protocol}"`)
  }
  return {
    url,
    serviceName: setting(env, "OTEL_SERVICE_NAME") ?? DEFAULTS.OTEL_SERVICE_NAME,
    protocol,
    headers: otlpHeaders(setting(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS") ?? setting(env, "OTEL_EXPORTER_OTLP_HEADERS")),
    exportIntervalMs: integer(env, "OTEL_BSP_SCHEDULE_DELAY", DEFAULTS.OTEL_BSP_SCHEDULE_DELAY, 1, 3_600_000)
  }
}

const readPem = (name: string, file: string): string => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unknown error"
    throw new ConfigError(`${name} cannot be read: ${file} (${code})`)
  }
}

const tlsFiles = (env: Env): TlsFiles | undefined => {
  const certFile = setting(env, "TLS_CERT_FILE")
  const keyFile = setting(env, "TLS_KEY_FILE")
  if (certFile === undefined && keyFile === undefined) return undefined
  if (certFile === undefined) throw new ConfigError(`TLS_CERT_FILE must be set when TLS_KEY_FILE is set`)
  if (keyFile === undefined) throw new ConfigError(`TLS_KEY_FILE must be set when TLS_CERT_FILE is set`)
  const cert = readPem("TLS_CERT_FILE", certFile)
  const key = readPem("TLS_KEY_FILE", keyFile)
  if (!cert.includes("-----BEGIN")) throw new ConfigError(`TLS_CERT_FILE is not a PEM file: ${certFile}`)
  if (!key.includes("-----BEGIN")) throw new ConfigError(`TLS_KEY_FILE is not a PEM file: ${keyFile}`)
  return { cert, key }
}

/** Reads every setting; throws ConfigError with a one-line message on the first bad one. */
export const loadConfig = (env: Env): AppConfigShape => {
  const prefix = setting(env, "PREFIX") ?? DEFAULTS.PREFIX
  if (!/^[a-z][a-z0-9]{0,15}$/.test(prefix)) {
    throw new ConfigError(`PREFIX must be 1-16 lowercase letters or digits starting with a letter, got "${prefix}"`)
  }
  const logLevel = (setting(env, "LOG_LEVEL") ?? DEFAULTS.LOG_LEVEL).toLowerCase()
  if (!(LOG_LEVELS as ReadonlyArray<string>).includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`)
  }
  const logFormat = (setting(env, "LOG_FORMAT") ?? DEFAULTS.LOG_FORMAT).toLowerCase()
  if (!(LOG_FORMATS as ReadonlyArray<string>).includes(logFormat)) {
    throw new ConfigError(`LOG_FORMAT must be "text" or "json", got "${logFormat}"`)
  }
  return {
    databaseUrl: databaseUrl(env),
    dataDir: path.resolve(setting(env, "DATA_DIR") ?? DEFAULTS.DATA_DIR),
    host: setting(env, "HOST") ?? DEFAULTS.HOST,
    port: integer(env, "PORT", DEFAULTS.PORT, 0, 65535),
    tls: tlsFiles(env),
    prefix,
    shards: integer(env, "SHARDS", DEFAULTS.SHARDS, 1, 4096),
    defaultMonthlyQuota: integer(env, "DEFAULT_MONTHLY_QUOTA", DEFAULTS.DEFAULT_MONTHLY_QUOTA, 0, Number.MAX_SAFE_INTEGER),
    blockPrivateTargets: boolean(env, "BLOCK_PRIVATE_TARGETS", DEFAULTS.BLOCK_PRIVATE_TARGETS),
    logLevel: logLevel as LogLevelName,
    logFormat: logFormat as LogFormatName,
    maxInFlight: integer(env, "MAX_IN_FLIGHT", DEFAULTS.MAX_IN_FLIGHT, 1, 100_000),
    drainTimeoutSeconds: integer(env, "DRAIN_TIMEOUT_SECONDS", DEFAULTS.DRAIN_TIMEOUT_SECONDS, 0, 3600),
    opsHost: setting(env, "OPS_HOST") ?? DEFAULTS.OPS_HOST,
    opsPort: opsPort(env),
    opsPortRequired: setting(env, "OPS_PORT") !== undefined,
    retentionDays: integer(env, "RETENTION_DAYS", DEFAULTS.RETENTION_DAYS, 0, 36_500),
    retentionBusyPercent: integer(env, "RETENTION_BUSY_PERCENT", DEFAULTS.RETENTION_BUSY_PERCENT, 1, 100),
    sessionIdleMinutes: integer(env, "SESSION_IDLE_MINUTES", DEFAULTS.SESSION_IDLE_MINUTES, 1, 10_080),
    sessionMaxHours: integer(env, "SESSION_MAX_HOURS", DEFAULTS.SESSION_MAX_HOURS, 1, 8_760),
    smtpUrl: smtpUrl(env),
    smtpFrom: smtpFrom(env),
    encryptionKeys: encryptionKeys(env),
    tracing: tracing(env)
  }
}

/**
 * The scheduler's timing: fixed by design rather than by the operator, but settings all the same —
 * the commands that decide whether to wake a shard read them here, and tests may shorten them.
 */
export interface SchedulerTimingShape {
  /** A shard actor keeps the triggers due within this window in its timer wheel. */
  readonly lookaheadMs: number
  /**
   * With fireWindowMs, how far past its grid instant a fire reaches (claimLeadMs + fireWindowMs =
   * 230 ms, the most a trigger is `running` before its time): triggers are fired ahead and handed to
   * delivery at their time, so the fire's round trip (the mark's commit with its WAL flush, the read)
   * is not part of their lateness. It is durable before anything it covers is sent.
   */
  readonly claimLeadMs: number
  /**
   * The rest of a fire's reach: what comes due within it is fired along and sent from memory at its
   * time, so a steady stream costs a mark move and a read per fire, not per trigger (at 2,000 due/s,
   * firing each alone fell seconds behind).
   */
  readonly fireWindowMs: number
  /**
   * Shards fire on a grid of instants this far apart, the same for every shard and node
   * (scheduler/shardActor.ts fireReach): a fire reaches claimLeadMs + fireWindowMs past its instant,
   * so every trigger is read at least claimLeadMs + fireWindowMs − fireEveryMs (130 ms; 110 when the
   * fire waits for a moment without sends, delivery/earlyRelease.ts FIRE_DEFER_MS) before its time,
   * and a node's shards firing at one instant share a mark move and a read.
   */
  readonly fireEveryMs: number
  /** How often each shard looks for triggers left claimed by a node that is gone. */
  readonly recoverEveryMs: number
  /** How often each shard creates missing generator instances (docs/cron.md: a background check every 5 s). */
  readonly materializeEveryMs: number
  /**
   * After the database (re)starts, how long before a node absent from it counts as gone: every live
   * node reconnects within it, so none is taken for dead (and its deliveries sent twice) meanwhile.
   */
  readonly restartGraceMs: number
}

export const SCHEDULER_TIMING: SchedulerTimingShape = {
  lookaheadMs: 60_000,
  claimLeadMs: 30,
  fireWindowMs: 200,
  fireEveryMs: 100,
  recoverEveryMs: 5_000,
  materializeEveryMs: 5_000,
  restartGraceMs: 10_000
}

export const SchedulerTiming = Context.Reference<SchedulerTimingShape>("timewheel/SchedulerTiming", {
  defaultValue: () => SCHEDULER_TIMING
})
