// Operator settings (docs/settings.md "Settings"): the default of every setting, the accepted edge
// values, and for each bad value the exact one-line message naming the setting. One child process
// checks that `npm start` turns a bad setting into that line on stderr and exit code 1.
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { loadTls } from "../src/api/tls.ts"
import { type AppConfigShape, ConfigError, DEFAULTS, loadConfig } from "../src/config.ts"
import { makeTempDir } from "./support/database.ts"
import { programLines, runChild } from "./support/cli.ts"

// Real PEM files (a self-signed pair as the service generates it), an unreadable path, a non-PEM file.
const dir = makeTempDir("config")
const pems = await loadTls({ tls: undefined, dataDir: dir })
const CERT = path.join(dir, "tls", "cert.pem")
const KEY = path.join(dir, "tls", "key.pem")
const NOT_PEM = path.join(dir, "not-pem.txt")
fs.writeFileSync(NOT_PEM, "this is not a certificate\n")
const MISSING = path.join(dir, "missing.pem")
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const errorOf = (env: Record<string, string>): ConfigError => {
  try {
    loadConfig(env)
  } catch (error) {
    assert.instanceOf(error, ConfigError)
    return error as ConfigError
  }
  return assert.fail(`loadConfig accepted ${JSON.stringify(env)}`)
}

describe("loadConfig", () => {
  it("defaults: every setting of the operator contract", () => {
    const config = loadConfig({})
    const expected: AppConfigShape = {
      databaseUrl: undefined,
      dataDir: path.resolve("./data"),
      host: "0.0.0.0",
      port: 8443,
      tls: undefined,
      prefix: "ttr",
      shards: 64,
      defaultMonthlyQuota: 1_000_000,
      blockPrivateTargets: false,
      logLevel: "info",
      logFormat: "text",
      maxInFlight: 256,
      drainTimeoutSeconds: 30,
      opsHost: "127.0.0.1",
      opsPort: 9464,
      opsPortRequired: false,
      retentionDays: 30,
      retentionBusyPercent: 10,
      sessionIdleMinutes: 30,
      sessionMaxHours: 12,
      smtpUrl: undefined,
      smtpFrom: "timewheel <timewheel@localhost>",
      encryptionKeys: null,
      tracing: null
    }
    assert.deepStrictEqual(config, expected)
    assert.strictEqual(DEFAULTS.DATA_DIR, "./data")
  })

  it("an empty or blank value counts as unset", () => {
    const blank = Object.fromEntries(Object.keys(DEFAULTS).map((name, i) => [name, i % 2 === 0 ? "" : "   "]))
    assert.deepStrictEqual(loadConfig(blank), loadConfig({}))
  })

  describe("accepted values", () => {
    const cases: ReadonlyArray<[string, Record<string, string>, Partial<AppConfigShape>]> = [
      ["PORT=0 (any free port)", { PORT: "0" }, { port: 0 }],
      ["PORT=65535", { PORT: "65535" }, { port: 65535 }],
      ["HOST", { HOST: "127.0.0.1" }, { host: "127.0.0.1" }],
      ["DATA_DIR is made absolute", { DATA_DIR: "some/dir" }, { dataDir: path.resolve("some/dir") }],
      ["SHARDS=1", { SHARDS: "1" }, { shards: 1 }],
      ["SHARDS=4096", { SHARDS: "4096" }, { shards: 4096 }],
      ["DEFAULT_MONTHLY_QUOTA=0", { DEFAULT_MONTHLY_QUOTA: "0" }, { defaultMonthlyQuota: 0 }],
      ["BLOCK_PRIVATE_TARGETS=true", { BLOCK_PRIVATE_TARGETS: "true" }, { blockPrivateTargets: true }],
      ["BLOCK_PRIVATE_TARGETS=false", { BLOCK_PRIVATE_TARGETS: "false" }, { blockPrivateTargets: false }],
      ["LOG_LEVEL in any case", { LOG_LEVEL: "DEBUG" }, { logLevel: "debug" }],
      ["LOG_LEVEL=none", { LOG_LEVEL: "none" }, { logLevel: "none" }],
      ["LOG_FORMAT=text", { LOG_FORMAT: "text" }, { logFormat: "text" }],
      ["LOG_FORMAT in any case", { LOG_FORMAT: "JSON" }, { logFormat: "json" }],
      ["PREFIX of letters and digits", { PREFIX: "svc2" }, { prefix: "svc2" }],
      ["PREFIX of 16 characters", { PREFIX: "a".repeat(16) }, { prefix: "a".repeat(16) }],
      ["MAX_IN_FLIGHT", { MAX_IN_FLIGHT: "1000" }, { maxInFlight: 1000 }],
      ["DRAIN_TIMEOUT_SECONDS", { DRAIN_TIMEOUT_SECONDS: "5" }, { drainTimeoutSeconds: 5 }],
      ["OPS_PORT set: required", { OPS_PORT: "9100" }, { opsPort: 9100, opsPortRequired: true }],
      ["OPS_PORT=0 (any free port)", { OPS_PORT: "0" }, { opsPort: 0, opsPortRequired: true }],
      ["OPS_PORT=off (no ops listener)", { OPS_PORT: "off" }, { opsPort: null }],
      ["OPS_HOST", { OPS_HOST: "0.0.0.0" }, { opsHost: "0.0.0.0" }],
      ["RETENTION_DAYS=0 (keep everything)", { RETENTION_DAYS: "0" }, { retentionDays: 0 }],
      ["RETENTION_DAYS=365", { RETENTION_DAYS: "365" }, { retentionDays: 365 }],
      ["RETENTION_BUSY_PERCENT=100 (no pause)", { RETENTION_BUSY_PERCENT: "100" }, { retentionBusyPercent: 100 }],
      ["SESSION_IDLE_MINUTES", { SESSION_IDLE_MINUTES: "5" }, { sessionIdleMinutes: 5 }],
      ["SESSION_MAX_HOURS", { SESSION_MAX_HOURS: "72" }, { sessionMaxHours: 72 }],
      ["SMTP_URL smtp://", { SMTP_URL: "smtp://user:pw@mail.example:587" }, { smtpUrl: "smtp://user:pw@mail.example:587" }],
      ["SMTP_URL smtps://", { SMTP_URL: "smtps://mail.example" }, { smtpUrl: "smtps://mail.example" }],
      ["SMTP_FROM an address", { SMTP_FROM: "alerts@example.com" }, { smtpFrom: "alerts@example.com" }],
      ["SMTP_FROM a name and an address", { SMTP_FROM: "Alerts <alerts@example.com>" }, { smtpFrom: "Alerts <alerts@example.com>" }],
      ["postgres:// URL", { DATABASE_URL: "postgres://u:p@db.example:5433/tw" }, { databaseUrl: "postgres://u:p@db.example:5433/tw" }],
      ["postgresql:// URL", { DATABASE_URL: "postgresql://db.example/tw" }, { databaseUrl: "postgresql://db.example/tw" }],
      ["both TLS files: their PEM contents", { TLS_CERT_FILE: CERT, TLS_KEY_FILE: KEY }, { tls: { cert: pems.cert, key: pems.key } }],
      [
        "OTEL_EXPORTER_OTLP_ENDPOINT: traces to its /v1/traces, as protobuf, service timewheel",
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" },
        { tracing: { url: "http://collector:4318/v1/traces", serviceName: "timewheel", protocol: "http/protobuf", headers: {}, exportIntervalMs: 5000 } }
      ],
      [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, before the general one; the other OTEL_ settings",
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://vendor.example/otlp/traces",
          OTEL_SERVICE_NAME: "tw-eu", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_HEADERS: "x-key=a%3Db, other = 2",
          OTEL_BSP_SCHEDULE_DELAY: "200"
        },
        {
          tracing: {
            url: "https://vendor.example/otlp/traces", serviceName: "tw-eu", protocol: "http/json", headers: { "x-key": "a=b", other: "2" },
            exportIntervalMs: 200
          }
        }
      ],
      ["OTEL_SDK_DISABLED=true: tracing off whatever the endpoint", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }, { tracing: null }]
    ]
    for (const [name, env, expected] of cases) {
      it(name, () => {
        const config = loadConfig(env)
        for (const [field, value] of Object.entries(expected)) {
          assert.deepStrictEqual(config[field as keyof AppConfigShape], value, field)
        }
      })
    }
  })

  it("ENCRYPTION_KEYS: the first key writes, every key opens", () => {
    const a = Buffer.alloc(32, 1).toString("base64")
    const b = Buffer.alloc(32, 2).toString("base64")
    const keys = loadConfig({ ENCRYPTION_KEYS: ` new:${a} , old_1:${b}` }).encryptionKeys!
    assert.strictEqual(keys.writer.id, "new")
    assert.deepStrictEqual([...keys.byId.keys()], ["new", "old_1"])
    assert.deepStrictEqual(keys.byId.get("old_1")!.key.export(), Buffer.alloc(32, 2))
  })

  describe("bad values: one line naming the setting", () => {
    const cases: ReadonlyArray<[string, Record<string, string>, string]> = [
      ["non-numeric PORT", { PORT: "https" }, `PORT must be an integer between 0 and 65535, got "https"`],
      ["PORT above range", { PORT: "65536" }, `PORT must be an integer between 0 and 65535, got "65536"`],
      ["negative PORT", { PORT: "-1" }, `PORT must be an integer between 0 and 65535, got "-1"`],
      ["fractional PORT", { PORT: "8443.5" }, `PORT must be an integer between 0 and 65535, got "8443.5"`],
      ["SHARDS 0", { SHARDS: "0" }, `SHARDS must be an integer between 1 and 4096, got "0"`],
      ["SHARDS non-numeric", { SHARDS: "many" }, `SHARDS must be an integer between 1 and 4096, got "many"`],
      ["SHARDS above range", { SHARDS: "4097" }, `SHARDS must be an integer between 1 and 4096, got "4097"`],
      ["BLOCK_PRIVATE_TARGETS yes", { BLOCK_PRIVATE_TARGETS: "yes" }, `BLOCK_PRIVATE_TARGETS must be "true" or "false", got "yes"`],
      ["BLOCK_PRIVATE_TARGETS 1", { BLOCK_PRIVATE_TARGETS: "1" }, `BLOCK_PRIVATE_TARGETS must be "true" or "false", got "1"`],
      [
        "DEFAULT_MONTHLY_QUOTA negative",
        { DEFAULT_MONTHLY_QUOTA: "-5" },
        `DEFAULT_MONTHLY_QUOTA must be an integer between 0 and 9007199254740991, got "-5"`
      ],
      [
        "DEFAULT_MONTHLY_QUOTA non-numeric",
        { DEFAULT_MONTHLY_QUOTA: "lots" },
        `DEFAULT_MONTHLY_QUOTA must be an integer between 0 and 9007199254740991, got "lots"`
      ],
      [
        "LOG_LEVEL unknown",
        { LOG_LEVEL: "verbose" },
        `LOG_LEVEL must be one of all, trace, debug, info, warn, error, fatal, none, got "verbose"`
      ],
      ["LOG_FORMAT unknown", { LOG_FORMAT: "logfmt" }, `LOG_FORMAT must be "text" or "json", got "logfmt"`],
      [
        "PREFIX in upper case",
        { PREFIX: "TTR" },
        `PREFIX must be 1-16 lowercase letters or digits starting with a letter, got "TTR"`
      ],
      [
        "PREFIX starting with a digit",
        { PREFIX: "1tw" },
        `PREFIX must be 1-16 lowercase letters or digits starting with a letter, got "1tw"`
      ],
      [
        "PREFIX with an underscore",
        { PREFIX: "ttr_" },
        `PREFIX must be 1-16 lowercase letters or digits starting with a letter, got "ttr_"`
      ],
      [
        "PREFIX of 17 characters",
        { PREFIX: "a".repeat(17) },
        `PREFIX must be 1-16 lowercase letters or digits starting with a letter, got "${"a".repeat(17)}"`
      ],
      ["MAX_IN_FLIGHT 0", { MAX_IN_FLIGHT: "0" }, `MAX_IN_FLIGHT must be an integer between 1 and 100000, got "0"`],
      ["DRAIN_TIMEOUT_SECONDS over an hour", { DRAIN_TIMEOUT_SECONDS: "3601" }, `DRAIN_TIMEOUT_SECONDS must be an integer between 0 and 3600, got "3601"`],
      ["OPS_PORT above range", { OPS_PORT: "65536" }, `OPS_PORT must be an integer between 0 and 65535 or "off", got "65536"`],
      ["OPS_PORT of words", { OPS_PORT: "none" }, `OPS_PORT must be an integer between 0 and 65535 or "off", got "none"`],
      ["RETENTION_DAYS negative", { RETENTION_DAYS: "-1" }, `RETENTION_DAYS must be an integer between 0 and 36500, got "-1"`],
      ["RETENTION_DAYS fractional", { RETENTION_DAYS: "1.5" }, `RETENTION_DAYS must be an integer between 0 and 36500, got "1.5"`],
      ["RETENTION_BUSY_PERCENT 0", { RETENTION_BUSY_PERCENT: "0" }, `RETENTION_BUSY_PERCENT must be an integer between 1 and 100, got "0"`],
      ["SESSION_IDLE_MINUTES 0", { SESSION_IDLE_MINUTES: "0" }, `SESSION_IDLE_MINUTES must be an integer between 1 and 10080, got "0"`],
      ["SESSION_MAX_HOURS of words", { SESSION_MAX_HOURS: "day" }, `SESSION_MAX_HOURS must be an integer between 1 and 8760, got "day"`],
      ["SMTP_URL of another scheme", { SMTP_URL: "http://mail.example" }, `SMTP_URL must start with smtp:// or smtps://, got "http://mail.example"`],
      ["SMTP_URL not a URL", { SMTP_URL: "mail.example:25" }, `SMTP_URL must start with smtp:// or smtps://, got "mail.example:25"`],
      ["SMTP_URL without a host", { SMTP_URL: "smtp://" }, `SMTP_URL has no host`],
      ["SMTP_FROM without an address", { SMTP_FROM: "timewheel" }, `SMTP_FROM must be an e-mail address or "Name <address>", got "timewheel"`],
      ["TLS_CERT_FILE unreadable", { TLS_CERT_FILE: MISSING, TLS_KEY_FILE: KEY }, `TLS_CERT_FILE cannot be read: ${MISSING} (ENOENT)`],
      ["TLS_KEY_FILE unreadable", { TLS_CERT_FILE: CERT, TLS_KEY_FILE: MISSING }, `TLS_KEY_FILE cannot be read: ${MISSING} (ENOENT)`],
      ["TLS_CERT_FILE is a directory", { TLS_CERT_FILE: dir, TLS_KEY_FILE: KEY }, `TLS_CERT_FILE cannot be read: ${dir} (EISDIR)`],
      ["only TLS_CERT_FILE", { TLS_CERT_FILE: CERT }, `TLS_KEY_FILE must be set when TLS_CERT_FILE is set`],
      ["only TLS_KEY_FILE", { TLS_KEY_FILE: KEY }, `TLS_CERT_FILE must be set when TLS_KEY_FILE is set`],
      ["TLS_CERT_FILE not PEM", { TLS_CERT_FILE: NOT_PEM, TLS_KEY_FILE: KEY }, `TLS_CERT_FILE is not a PEM file: ${NOT_PEM}`],
      ["TLS_KEY_FILE not PEM", { TLS_CERT_FILE: CERT, TLS_KEY_FILE: NOT_PEM }, `TLS_KEY_FILE is not a PEM file: ${NOT_PEM}`],
      [
        "DATABASE_URL that does not parse",
        { DATABASE_URL: "localhost:5432/timewheel" },
        `DATABASE_URL must start with postgres:// or postgresql://, got "localhost://"`
      ],
      [
        "DATABASE_URL that is no URL at all",
        { DATABASE_URL: "not a url" },
        `DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)`
      ],
      [
        "DATABASE_URL of another scheme",
        { DATABASE_URL: "mysql://root@127.0.0.1/tw" },
        `DATABASE_URL must start with postgres:// or postgresql://, got "mysql://"`
      ],
      ["DATABASE_URL without a host", { DATABASE_URL: "postgres:///timewheel" }, `DATABASE_URL has no host`],
      [
        "ENCRYPTION_KEYS without an id",
        { ENCRYPTION_KEYS: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" },
        `ENCRYPTION_KEYS: each entry must be <id>:<base64 of 32 bytes> with an id of 1-32 letters, digits, _ or -, got "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="`
      ],
      [
        "ENCRYPTION_KEYS with a short key",
        { ENCRYPTION_KEYS: "k1:c2hvcnQ=" },
        `ENCRYPTION_KEYS: the key "k1" must be the base64 of 32 bytes (e.g. openssl rand -base64 32)`
      ],
      [
        "ENCRYPTION_KEYS with an id twice",
        { ENCRYPTION_KEYS: "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=,k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" },
        `ENCRYPTION_KEYS: the key id "k1" is given twice`
      ],
      ["OTEL_EXPORTER_OTLP_ENDPOINT not a URL", { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, `OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, got "collector:4318"`],
      [
        "OTEL_EXPORTER_OTLP_PROTOCOL grpc",
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
        `OTEL_EXPORTER_OTLP_PROTOCOL must be "http/protobuf" or "http/json" (grpc is not supported), got "grpc"`
      ],
      [
        "OTEL_EXPORTER_OTLP_HEADERS without =",
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "token" },
        `OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas, got "token"`
      ]
    ]
    for (const [name, env, message] of cases) {
      it(name, () => {
        const error = errorOf(env)
        assert.strictEqual(error.message, message)
        assert.notInclude(error.message, "\n")
      })
    }
  })
})

describe("npm start with a bad setting", () => {
  it("prints one line on stderr and exits 1", { timeout: 60_000 }, async () => {
    const dataDir = makeTempDir("config-start")
    const result = await runChild("npm", ["start"], { env: { PORT: "eighty", DATA_DIR: dataDir }, timeoutMs: 45_000 })
    fs.rmSync(dataDir, { recursive: true, force: true })
    assert.strictEqual(result.code, 1)
    // npm may add its own warnings (about the local npmrc); the service writes exactly one line
    assert.deepStrictEqual(programLines(result.stderr), [
      `timewheel: PORT must be an integer between 0 and 65535, got "eighty"`
    ])
    assert.notInclude(result.stdout, "listening")
  })
})
