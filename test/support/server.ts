// The real service in-process for tests: HTTPS on a free loopback port, a fresh database, and a
// small client (undici, certificate not verified) plus helpers to create projects and keys and to
// call /schedule and /cancel.
import { assert } from "@effect/vitest"
import { Clock, Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as fs from "node:fs"
import { Agent, request } from "undici"
import { loadTls } from "../../src/api/tls.ts"
import { createApiKey } from "../../src/commands/apiKeys.ts"
import { createProject } from "../../src/commands/projects.ts"
import { type AppConfigShape, loadConfig } from "../../src/config.ts"
import { ServiceLive } from "../../src/service.ts"
import { freshDatabaseUrl, makeTempDir, SHARDS_IN_TESTS } from "./database.ts"

export interface TestResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly json: () => any
}

export interface CallOptions {
  readonly headers?: Record<string, string> | Array<[string, string]>
  readonly body?: string | Uint8Array
}

export const insecureAgent = new Agent({ connect: { rejectUnauthorized: false }, keepAliveTimeout: 1000 })

export const call = (baseUrl: string, method: string, path: string, options: CallOptions = {}) =>
  Effect.promise(async (): Promise<TestResponse> => {
    const headers = Array.isArray(options.headers) ? options.headers.flat() : options.headers
    const response = await request(baseUrl + path, {
      method,
      dispatcher: insecureAgent,
      ...(headers === undefined ? {} : { headers }),
      ...(options.body === undefined ? {} : { body: options.body })
    })
    const text = await response.body.text()
    return { status: response.statusCode, headers: response.headers, text, json: () => JSON.parse(text) }
  })

export class TestServer extends Context.Service<TestServer, {
  readonly baseUrl: string
  readonly config: AppConfigShape
  readonly call: (method: string, path: string, options?: CallOptions) => Effect.Effect<TestResponse>
  /** A new project (with an optional monthly quota) and a key for it. */
  readonly newKey: (options?: { readonly monthlyQuota?: number }) => Effect.Effect<string>
}>()("test/TestServer") {}

let projectCounter = 0

/** The default clock, captured outside any test (module scope has no TestClock). */
const LIVE_CLOCK = Effect.runSync(Effect.clockWith((clock) => Effect.succeed(clock)))

/**
 * The whole service on `databaseUrl`, with a fresh DATA_DIR, and the TestServer over it: `settings`
 * (environment variables) override the test defaults (free ports on loopback, SHARDS_IN_TESTS).
 * Projects made by newKey are named `<projectPrefix>-<n>-<random>`.
 */
export const serviceOn = (databaseUrl: string, settings: Record<string, string>, projectPrefix = "project") =>
  Layer.unwrap(Effect.gen(function*() {
    const dataDir = makeTempDir("data")
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dataDir, { recursive: true, force: true })))
    const config = loadConfig({
      PORT: "0",
      HOST: "127.0.0.1",
      SHARDS: String(SHARDS_IN_TESTS),
      ...settings,
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir
    })
    const tls = yield* Effect.promise(() => loadTls(config))
    // the service runs on the real clock even inside @effect/vitest's layer(), which provides a
    // TestClock: its scheduler must sleep in real time and stamp real dates
    const service = ServiceLive(config, tls).pipe(Layer.provide(Layer.succeed(Clock.Clock)(LIVE_CLOCK)))
    const testServer = Layer.effect(TestServer, Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const port = "port" in server.address ? server.address.port : 0
      const baseUrl = `https://127.0.0.1:${port}`
      const context = yield* Effect.context<never>()
      return TestServer.of({
        baseUrl,
        config,
        call: (method, path, options) => call(baseUrl, method, path, options),
        newKey: (options) =>
          Effect.gen(function*() {
            const name = `${projectPrefix}-${++projectCounter}-${Math.random().toString(36).slice(2, 8)}`
            yield* createProject(name, options?.monthlyQuota)
            return yield* createApiKey(name)
          }).pipe(Effect.provideContext(context), Effect.orDie) as Effect.Effect<string>
      })
    }))
    return Layer.provideMerge(testServer, service)
  }))

/** The whole service on a fresh database (or env.DATABASE_URL); `env` overrides settings (as environment variables). */
export const testServerLayer = (env: Record<string, string> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    // a test starting several services on one database passes its DATABASE_URL
    const databaseUrl = env.DATABASE_URL ?? (yield* freshDatabaseUrl)
    return serviceOn(databaseUrl, { LOG_LEVEL: "error", OPS_PORT: "0", ...env })
  }))

// --- calls through the shared TestServer --------------------------------------------------------------

export type Headers = Record<string, string> | Array<[string, string]>

/** A new project (with an optional monthly quota) and a key for it. */
export const newKey = (monthlyQuota?: number) =>
  TestServer.use((server) => server.newKey(monthlyQuota === undefined ? {} : { monthlyQuota }))

export interface ScheduleOptions {
  readonly method?: string
  readonly body?: string | Uint8Array
}

/** Any-method /schedule with these headers. */
export const schedule = (headers: Headers, options: ScheduleOptions = {}) =>
  TestServer.use((server) =>
    server.call(options.method ?? "POST", "/schedule", {
      headers,
      ...(options.body === undefined ? {} : { body: options.body })
    }))

export interface ScheduleBody {
  readonly triggerId: string
  readonly scheduledAt: string
  readonly operation: string
  readonly kind: string
  readonly status: string
  readonly monthQuotaRemaining: number
}

/** Schedules and returns the 200 body (fails the test otherwise). */
export const scheduled = (headers: Headers, options: ScheduleOptions = {}) =>
  Effect.map(schedule(headers, options), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return response.json() as ScheduleBody
  })

/** /cancel (DELETE unless told) with these headers. */
export const cancel = (headers: Record<string, string>, method = "DELETE") =>
  TestServer.use((server) => server.call(method, "/cancel", { headers }))
