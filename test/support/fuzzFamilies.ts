// Arbitrary requests to the endpoint families beyond /schedule, /cancel and the log reads
// (RELIABILITY.md "Fuzzing"), each with inputs shaped to it (fuzzShapes.ts: deep and wide JSON, huge arrays and strings,
// control characters, wrong types, many headers): /declare, /bulk, /tag-policies, /target-policies
// and /targets, replay, /mcp
// (JSON-RPC messages, tools with any arguments, any protocol version or session id), the dashboard's
// endpoints with a signed-in session (keys, alerts, overview, cancel, sign-in, its pages and the
// shared endpoints through the session, POST /actions and /dead-letters among them), the ops port (/livez, /readyz, /metrics), and /health,
// /docs, /openapi/json. Loopback only: URLs in bodies are confined to the safe target, and the
// session is never signed out (DELETE /session is sent with other cookies only).
import fc from "fast-check"
import { actionBody, actionReadPath, anyRequest, deadLettersPath, type FuzzRequest } from "./fuzzInputs.ts"
import { controlString, hostileJson, jsonText, manyHeaders, SAFE_TARGET, shapedBody, wrongType } from "./fuzzShapes.ts"

/** What the requests may use: the key, some ids of the project, and a signed-in dashboard session. */
export interface FuzzContext {
  readonly key: string
  readonly jobIds: ReadonlyArray<string>
  readonly policyIds: ReadonlyArray<string>
  /** Ids of target policies of the project (none: ids are made up). */
  readonly targetPolicyIds?: ReadonlyArray<string>
  readonly session?: {
    /** The Cookie header value of the session. */
    readonly cookie: string
    readonly projectId: string
    /** This host's Origin (what the dashboard's pages send). */
    readonly origin: string
  } | undefined
}

/** Every byte of the text's UTF-8 percent-encoded (encodeURIComponent throws on a lone surrogate). */
const percentEncoded = (text: string) => [...Buffer.from(text, "utf8")].map((byte) => `%${byte.toString(16).padStart(2, "0")}`).join("")

const uuid = fc.oneof(fc.uuid(), fc.constant("01890000-0000-7000-8000-000000000000"), controlString.map(percentEncoded))
const idOf = (known: ReadonlyArray<string>) => (known.length === 0 ? uuid : fc.oneof(fc.constantFrom(...known), uuid))

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant("application/json") },
  { weight: 1, arbitrary: fc.constantFrom("text/plain", "", "application/json; charset=latin1", "APPLICATION/JSON", "multipart/form-data; boundary=x") }
)

/** A credential header of the key, mostly right. */
const keyHeaders = (key: string) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant([["ttr-api-key", key]] as ReadonlyArray<readonly [string, string]>) },
    { weight: 4, arbitrary: fc.constant([["authorization", `Bearer ${key}`]] as ReadonlyArray<readonly [string, string]>) },
    { weight: 1, arbitrary: fc.constantFrom<ReadonlyArray<readonly [string, string]>>([], [["authorization", "Bearer"]], [["ttr-api-key", "ttr_x"]], [["authorization", `Basic ${key}`]]) }
  )

const safeUrl = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(`${SAFE_TARGET}/`, `${SAFE_TARGET}/hook?a=1`) },
  { weight: 1, arbitrary: fc.oneof(controlString, fc.constantFrom("", "not a url", "ftp://127.0.0.1:9/", "http://", "//x", "http://[::1")) }
)
const scheduledAt = fc.oneof(
  fc.constantFrom("now", "now | add 1h", "2099-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "cron(0 0 1 1 *)", "cron(0 0 1 1 *, Europe/Paris)", "cron(", "cron(* * *)", "tomorrow"),
  controlString
)
const tag = fc.oneof({ weight: 6, arbitrary: fc.constantFrom("billing", "trial", "fuzz", "a", "x-y_z") }, { weight: 1, arbitrary: controlString }, { weight: 1, arbitrary: fc.string({ maxLength: 60 }) })
const maybe = <A>(arbitrary: fc.Arbitrary<A>) => fc.oneof({ weight: 5, arbitrary }, { weight: 1, arbitrary: wrongType })

const retryObject = fc.record({
  strategy: maybe(fc.constantFrom("none", "fixed", "exponential")),
  maxAttempts: maybe(fc.integer({ min: 0, max: 20 })),
  initialDelaySeconds: maybe(fc.integer({ min: -1, max: 90_000 })),
  maxDelaySeconds: maybe(fc.integer({ min: 0, max: 90_000 })),
  jitter: maybe(fc.boolean()),
  retryOn: maybe(fc.constantFrom("network_only", "5xx_and_network", "non_2xx"))
}, { requiredKeys: [] })

/** A /declare or /bulk item (the JSON form of a /schedule call). */
const item = fc.record({
  url: safeUrl,
  scheduledAt: maybe(scheduledAt),
  customKey: maybe(fc.oneof(fc.string({ maxLength: 12 }), controlString)),
  method: maybe(fc.constantFrom("GET", "POST", "put", "DELETE", "x y", "")),
  headers: maybe(fc.dictionary(fc.oneof(fc.constantFrom("content-type", "host", "connection", "transfer-encoding", "x-a"), fc.string({ maxLength: 8 })), fc.oneof(fc.string({ maxLength: 20 }), controlString), { maxKeys: 5 })),
  body: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({ _tag: fc.constantFrom("text", "base64", "other"), value: fc.oneof(fc.string(), controlString) })),
  title: maybe(fc.oneof(fc.string({ maxLength: 30 }), controlString)),
  tags: maybe(fc.array(tag, { maxLength: 4 })),
  retry: maybe(retryObject)
}, { requiredKeys: ["url"] })

const declareBody = fc.record({ tag: maybe(tag), items: maybe(fc.array(item, { maxLength: 8 })), runMissed: maybe(fc.boolean()) }, { requiredKeys: [] })
const bulkBody = (ctx: FuzzContext) =>
  fc.record({
    upserts: maybe(fc.array(item, { maxLength: 6 })),
    cancels: maybe(fc.array(fc.oneof(idOf(ctx.jobIds), fc.record({ customKey: fc.string({ maxLength: 8 }) }), fc.record({ tag }), fc.record({ id: uuid, tag }), wrongType), { maxLength: 6 }))
  }, { requiredKeys: [] })

const policyBody = fc.record({
  tag,
  maxConcurrent: maybe(fc.integer({ min: -1, max: 1_000 })),
  throughput: maybe(fc.dictionary(fc.constantFrom("1s", "15m", "2h", "1d", "1w", "01s", "0s", "s", ""), fc.oneof(fc.double({ min: -1, max: 1e6, noNaN: true }), fc.constant(0)), { maxKeys: 10 })),
  requestTimeoutSeconds: maybe(fc.integer({ min: 0, max: 4_000 })),
  retryStrategy: maybe(fc.constantFrom("none", "fixed", "exponential", null)),
  retryMaxAttempts: maybe(fc.oneof(fc.integer({ min: 0, max: 10 }), fc.constant(null))),
  retryInitialDelaySeconds: maybe(fc.integer({ min: -1, max: 90_000 })),
  retryMaxDelaySeconds: maybe(fc.integer({ min: -1, max: 90_000 })),
  retryOn: maybe(fc.constantFrom("network_only", "5xx_and_network", "non_2xx", null))
}, { requiredKeys: [] })

/** An origin as a target policy takes it: well formed, `*`, or one of the refused forms. */
const origin = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(SAFE_TARGET, "*", "HTTPS://API.example.com:443", "http://[::1]:9", "https://bücher.example") },
  { weight: 2, arbitrary: fc.constantFrom("https://a.example/v1", "https://a.example?x", "https://u:p@a.example", "ftp://a.example", "a.example", "", "**", "http://") },
  { weight: 1, arbitrary: fc.oneof(controlString, fc.string({ maxLength: 40 })) }
)

const targetPolicyBody = fc.record({
  origin: maybe(origin),
  maxConcurrent: maybe(fc.oneof(fc.integer({ min: -1, max: 1_000 }), fc.constant(null))),
  throughput: maybe(fc.dictionary(fc.constantFrom("1s", "1m", "1w", "0s", ""), fc.oneof(fc.double({ min: -1, max: 1e6, noNaN: true }), fc.constant(0)), { maxKeys: 9 })),
  circuitBreaker: maybe(fc.oneof(
    fc.record({ failures: maybe(fc.integer({ min: -1, max: 100 })), cooldownSeconds: maybe(fc.integer({ min: -1, max: 5_000 })) }, { requiredKeys: [] }),
    fc.constant(null)
  ))
}, { requiredKeys: [] })

/** A JSON-bodied request with credentials, extra headers and a content type. */
const jsonCall = (method: string, path: fc.Arbitrary<string>, body: fc.Arbitrary<string>, credentials: fc.Arbitrary<ReadonlyArray<readonly [string, string]>>) =>
  fc.record({ path, body, credentials, contentType: fc.option(contentType, { freq: 10 }), extra: manyHeaders })
    .map(({ path, body, credentials, contentType, extra }): FuzzRequest => ({
      method,
      path,
      headers: [...credentials, ...(contentType === null ? [] : [["content-type", contentType] as const]), ...extra],
      body
    }))

/** POST /declare and POST /bulk. */
export const declareAndBulkRequest = (ctx: FuzzContext) =>
  fc.oneof(
    jsonCall("POST", fc.constant("/declare"), shapedBody(declareBody), keyHeaders(ctx.key)),
    jsonCall("POST", fc.constant("/bulk"), shapedBody(bulkBody(ctx)), keyHeaders(ctx.key))
  )

/** GET, POST, PUT and DELETE of /tag-policies. */
export const tagPolicyRequest = (ctx: FuzzContext) => {
  const policyPath = idOf(ctx.policyIds).map((id) => `/tag-policies/${id}`)
  const bare = (method: string, path: fc.Arbitrary<string>) =>
    fc.record({ path, credentials: keyHeaders(ctx.key), extra: manyHeaders }).map(({ path, credentials, extra }): FuzzRequest => ({ method, path, headers: [...credentials, ...extra] }))
  return fc.oneof(
    bare("GET", fc.constant("/tag-policies")),
    jsonCall("POST", fc.constant("/tag-policies"), shapedBody(policyBody), keyHeaders(ctx.key)),
    jsonCall("PUT", policyPath, shapedBody(policyBody), keyHeaders(ctx.key)),
    bare("DELETE", policyPath)
  )
}

/** GET, POST, PUT and DELETE of /target-policies, and GET /targets. */
export const targetPolicyRequest = (ctx: FuzzContext) => {
  const policyPath = idOf(ctx.targetPolicyIds ?? []).map((id) => `/target-policies/${id}`)
  const bare = (method: string, path: fc.Arbitrary<string>) =>
    fc.record({ path, credentials: keyHeaders(ctx.key), extra: manyHeaders }).map(({ path, credentials, extra }): FuzzRequest => ({ method, path, headers: [...credentials, ...extra] }))
  return fc.oneof(
    bare("GET", fc.constantFrom("/target-policies", "/targets", "/targets?x=%00")),
    jsonCall("POST", fc.constant("/target-policies"), shapedBody(targetPolicyBody), keyHeaders(ctx.key)),
    jsonCall("PUT", policyPath, shapedBody(targetPolicyBody), keyHeaders(ctx.key)),
    bare("DELETE", policyPath)
  )
}

/** POST /jobs/{id}/executions (replay) with shaped bodies. */
export const replayRequest = (ctx: FuzzContext) =>
  jsonCall(
    "POST",
    idOf(ctx.jobIds).map((id) => `/jobs/${id}/executions`),
    shapedBody(fc.record({ triggeredBy: fc.oneof(fc.constant("retry"), wrongType) }, { requiredKeys: [] })),
    keyHeaders(ctx.key)
  )

const TOOLS = [
  "schedule_trigger", "cancel_trigger", "declare_triggers", "bulk_triggers", "list_jobs", "get_job", "list_executions", "get_execution",
  "replay_job", "list_tag_policies", "create_tag_policy", "update_tag_policy", "delete_tag_policy", "get_retry_policy", "update_retry_policy", "cron_next",
  "list_target_policies", "create_target_policy", "update_target_policy", "delete_target_policy", "list_targets"
]

/** A tool's arguments: plausible fields of every tool mixed, or any JSON. */
const toolArguments = (ctx: FuzzContext) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({
      url: safeUrl, scheduledAt, id: idOf(ctx.jobIds), triggerId: idOf(ctx.jobIds), customKey: fc.string({ maxLength: 8 }), tag,
      items: fc.array(item, { maxLength: 3 }), upserts: fc.array(item, { maxLength: 3 }), cancels: fc.array(idOf(ctx.jobIds), { maxLength: 3 }),
      limit: maybe(fc.integer({ min: -1, max: 600 })), cursor: maybe(fc.string({ maxLength: 10 })), value: maybe(fc.constantFrom("cron(0 0 * * *)", "cron(")),
      count: maybe(fc.integer({ min: -1, max: 200 })), headers: maybe(fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 })),
      body: fc.jsonValue({ maxDepth: 2 }), maxConcurrent: maybe(fc.integer({ min: 0, max: 5 })), origin: maybe(origin),
      circuitBreaker: maybe(fc.record({ failures: maybe(fc.integer({ min: 0, max: 5 })), cooldownSeconds: maybe(fc.integer({ min: 0, max: 4_000 })) }))
    }, { requiredKeys: [] }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) }
  )

/** A JSON-RPC message of MCP: initialize, tools/list, tools/call, notifications, nonsense. */
const mcpMessage = (ctx: FuzzContext) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.record({
      jsonrpc: fc.constant("2.0"), id: fc.oneof(fc.nat(), fc.string({ maxLength: 5 }), fc.constant(null)), method: fc.constant("initialize"),
      params: fc.record({ protocolVersion: fc.constantFrom("2025-06-18", "2025-03-26", "2025-11-25", "2024-11-05", "1999-01-01"), capabilities: fc.oneof(fc.constant({}), wrongType), clientInfo: fc.oneof(fc.record({ name: fc.string(), version: fc.string() }), wrongType) }, { requiredKeys: [] })
    }, { requiredKeys: ["jsonrpc", "method"] }) },
    { weight: 2, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), id: fc.nat(), method: fc.constantFrom("tools/list", "ping", "resources/list", "prompts/list", "logging/setLevel", "completion/complete", "nope"), params: fc.option(fc.jsonValue({ maxDepth: 2 })) }) },
    { weight: 5, arbitrary: fc.record({
      jsonrpc: fc.constant("2.0"), id: fc.nat(), method: fc.constant("tools/call"),
      params: fc.record({ name: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...TOOLS) }, { weight: 1, arbitrary: fc.string({ maxLength: 10 }) }), arguments: toolArguments(ctx) }, { requiredKeys: ["name"] })
    }) },
    { weight: 1, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), method: fc.constantFrom("notifications/initialized", "notifications/cancelled", "notifications/progress"), params: fc.option(fc.record({ requestId: fc.nat() })) }) },
    { weight: 1, arbitrary: fc.array(fc.record({ jsonrpc: fc.constant("2.0"), id: fc.nat(), method: fc.constant("tools/list") }), { maxLength: 3 }) }
  )

/** POST /mcp (any message, protocol version, session id, Accept), and its other methods. */
export const mcpRequest = (ctx: FuzzContext) =>
  fc.record({
    method: fc.oneof({ weight: 12, arbitrary: fc.constant("POST") }, { weight: 1, arbitrary: fc.constantFrom("GET", "DELETE", "PUT", "OPTIONS") }),
    body: fc.oneof({ weight: 8, arbitrary: mcpMessage(ctx).map(jsonText) }, { weight: 2, arbitrary: hostileJson }),
    credentials: keyHeaders(ctx.key),
    version: fc.option(fc.constantFrom("2025-06-18", "2025-03-26", "2026-07-28", "x", ""), { freq: 2 }),
    session: fc.option(fc.oneof(fc.uuid(), fc.string({ maxLength: 10 })), { freq: 6 }),
    accept: fc.oneof({ weight: 8, arbitrary: fc.constant("application/json, text/event-stream") }, { weight: 1, arbitrary: fc.constantFrom("application/json", "*/*", "text/event-stream", "") }),
    contentType: fc.oneof({ weight: 8, arbitrary: fc.constant("application/json") }, { weight: 1, arbitrary: fc.constantFrom("text/plain", "") }),
    extra: manyHeaders
  }).map(({ method, body, credentials, version, session, accept, contentType, extra }): FuzzRequest => ({
    method,
    path: "/mcp",
    headers: [
      ...credentials, ["accept", accept], ["content-type", contentType],
      ...(version === null || version === "" ? [] : [["mcp-protocol-version", version] as const]),
      ...(session === null || session.trim() === "" ? [] : [["mcp-session-id", session.trim()] as const]),
      ...extra
    ],
    ...(method === "POST" || method === "PUT" ? { body } : {})
  }))

/** The dashboard's endpoints with the signed-in session (and sometimes without its Origin or project). */
export const dashboardRequest = (ctx: FuzzContext) => {
  const session = ctx.session
  if (session === undefined) return fc.constant<FuzzRequest>({ method: "GET", path: "/session", headers: [] })
  const alerts = fc.record({
    webhookUrl: fc.oneof(safeUrl, fc.constant(null), wrongType),
    emailRecipients: fc.oneof(fc.array(fc.oneof(fc.emailAddress(), controlString), { maxLength: 4 }), wrongType)
  }, { requiredKeys: [] })
  const signIn = fc.record({ email: fc.oneof(fc.emailAddress(), controlString, wrongType), password: fc.oneof(fc.string({ maxLength: 20 }), wrongType) }, { requiredKeys: [] })
  const target = fc.oneof(
    fc.constant({ method: "GET", path: "/session" }),
    fc.constant({ method: "DELETE", path: "/session" }),
    fc.constant({ method: "GET", path: "/projects" }),
    fc.constant({ method: "GET", path: "/keys" }),
    fc.constant({ method: "POST", path: "/keys" }),
    shapedBody(fc.record({ label: fc.oneof(fc.string({ maxLength: 120 }), controlString, wrongType) }, { requiredKeys: [] })).map((body) => ({ method: "POST", path: "/keys", body })),
    uuid.map((id) => ({ method: "DELETE", path: `/keys/${id}` })),
    fc.constant({ method: "GET", path: "/alerts" }),
    shapedBody(alerts).map((body) => ({ method: "PUT", path: "/alerts", body })),
    fc.constant({ method: "POST", path: "/alerts/test" }),
    fc.constantFrom("", "?hours=1", "?hours=6", "?hours=24", "?hours=0", "?hours=%00", "?hours=1&hours=6", "?hours=1e400").map((q) => ({ method: "GET", path: `/overview${q}` })),
    idOf(ctx.jobIds).map((id) => ({ method: "POST", path: `/jobs/${id}/cancel` })),
    shapedBody(signIn).map((body) => ({ method: "POST", path: "/session", body })),
    fc.constantFrom("/jobs?limit=5", "/executions?deadLetterOnly=true", "/tag-policies", "/target-policies", "/targets", "/project/retry-policy")
      .map((path) => ({ method: "GET", path })),
    idOf(ctx.jobIds).map((id) => ({ method: "GET", path: `/jobs/${id}` })),
    uuid.map((id) => ({ method: "GET", path: `/executions/${id}` })),
    deadLettersPath.map((path) => ({ method: "GET", path })),
    actionBody.map((body) => ({ method: "POST", path: "/actions", body })),
    actionReadPath.map((path) => ({ method: "GET", path })),
    shapedBody(declareBody).map((body) => ({ method: "POST", path: "/declare", body })),
    fc.constantFrom("/", "/?x=1", "/dashboard", "/dashboard/", "/dashboard/triggers", "/dashboard/x/../../etc/passwd", "/dashboard/%00", "/dashboard/assets/app.js", "/dashboard/nope.css").map((path) => ({ method: "GET", path }))
  )
  return fc.record({
    target,
    project: fc.oneof({ weight: 8, arbitrary: fc.constant(session.projectId) }, { weight: 1, arbitrary: fc.oneof(uuid, fc.constantFrom("x", "ÿ", "none")) }),
    origin: fc.oneof({ weight: 8, arbitrary: fc.constant(session.origin) }, { weight: 1, arbitrary: fc.constantFrom("https://evil.example", "null", "") }),
    cookie: fc.oneof({ weight: 10, arbitrary: fc.constant(session.cookie) }, { weight: 1, arbitrary: fc.constantFrom("__Host-timewheel-session=x", "", "a=b; c") }),
    extra: manyHeaders
  }).map(({ target, project, origin, cookie, extra }): FuzzRequest => ({
    method: target.method,
    path: target.path,
    headers: [
      ["cookie", cookie], ["timewheel-project", project],
      ...(origin === "" ? [] : [["origin", origin] as const]),
      ...("body" in target ? [["content-type", "application/json"] as const] : []),
      ...extra
    ],
    ...("body" in target ? { body: target.body } : {})
  }))
    // never end the fuzzer's own session: a sign-out is sent with the other cookies only
    .map((req) => (req.method === "DELETE" && req.path === "/session" && req.headers.some(([name, value]) => name === "cookie" && value === session.cookie)
      ? { ...req, headers: req.headers.map(([name, value]) => (name === "cookie" ? [name, "__Host-timewheel-session=x"] as const : [name, value] as const)) }
      : req))
}

/** The ops port: its three endpoints and anything else, any method, many headers. */
export const opsRequest = fc.record({
  method: fc.oneof({ weight: 6, arbitrary: fc.constant("GET") }, { weight: 1, arbitrary: fc.constantFrom("POST", "HEAD", "DELETE", "OPTIONS", "PURGE") }),
  path: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom("/livez", "/readyz", "/metrics") },
    { weight: 1, arbitrary: fc.constantFrom("/", "/metrics?x=1", "/metrics/", "//metrics", "/%00", "/health", "/livez/../metrics") }
  ),
  extra: manyHeaders,
  body: fc.option(hostileJson, { freq: 8 })
}).map(({ method, path, extra, body }): FuzzRequest => ({
  method, path, headers: extra, port: "ops",
  ...(body === null || method === "GET" || method === "HEAD" ? {} : { body })
}))

/** The documents and /health, with any credentials and headers. */
export const documentRequest = (ctx: FuzzContext) =>
  fc.record({
    path: fc.constantFrom("/health", "/docs", "/openapi/json", "/openapi/json?x=%00", "/docs/", "/health?x=1"),
    credentials: fc.oneof(keyHeaders(ctx.key), fc.constant([])),
    extra: manyHeaders
  }).map(({ path, credentials, extra }): FuzzRequest => ({ method: "GET", path, headers: [...credentials, ...extra] }))

/** Every family of this file, weighted toward the JSON endpoints. */
export const familyRequest = (ctx: FuzzContext): fc.Arbitrary<FuzzRequest> =>
  fc.oneof(
    { weight: 4, arbitrary: declareAndBulkRequest(ctx) },
    { weight: 3, arbitrary: tagPolicyRequest(ctx) },
    { weight: 2, arbitrary: targetPolicyRequest(ctx) },
    { weight: 2, arbitrary: replayRequest(ctx) },
    { weight: 4, arbitrary: mcpRequest(ctx) },
    { weight: 4, arbitrary: dashboardRequest(ctx) },
    { weight: 2, arbitrary: opsRequest },
    { weight: 1, arbitrary: documentRequest(ctx) }
  )


/** Every request the fuzzers send: the first families (fuzzInputs.ts) and these, about half each. */
export const everyRequest = (ctx: FuzzContext): fc.Arbitrary<FuzzRequest> =>
  fc.oneof({ weight: 1, arbitrary: anyRequest(ctx.key, ctx.jobIds) }, { weight: 1, arbitrary: familyRequest(ctx) })
