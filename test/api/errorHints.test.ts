// docs/errors.md "Error hints" against the real service, one row per endpoint × case: every 4xx answer
// carries a `Timewheel-Error` header, one line of plain ASCII naming what was wrong, while the body
// stays exactly as documented (empty where the docs say empty); /schedule answers its `status`, and
// a skipped one-shot a `Timewheel-Warning`. Rows cover /schedule, /cancel, /declare, /bulk,
// /tag-policies, the log reads and replay, the project retry policy, /mcp, the router's own 404s
// and a hand-built 404 of the dashboard's assets.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestServer, testServerLayer, type TestResponse } from "../support/server.ts"

const FAR = "2099-01-01T00:00:00Z"
const URL_OK = "http://127.0.0.1:9/hook"
const UNKNOWN_KEY = "ttr_" + "0".repeat(48)
const UNKNOWN_ID = "01890000-0000-7000-8000-000000000000"
const JSON_TYPE = { "content-type": "application/json" }
const MCP_ACCEPT = { accept: "application/json, text/event-stream" }
const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
})

interface Row {
  readonly endpoint: string
  readonly name: string
  readonly method: string
  readonly path: string
  /** The request's headers, given the key of a fresh project. */
  readonly headers?: (key: string) => Record<string, string>
  readonly body?: string
  readonly status: number
  /** The body exactly as the docs say: "" for the empty ones. */
  readonly responseBody: string
  /** The `Timewheel-Error` header, exactly, or a pattern. */
  readonly hint: string | RegExp
}

const error = (tag: string, message: string) => JSON.stringify({ _tag: tag, message })
const withKey = (extra: Record<string, string> = {}) => (key: string) => ({ "ttr-api-key": key, ...extra })
const bearer = (extra: Record<string, string> = {}) => (key: string) => ({ authorization: `Bearer ${key}`, ...extra })

const ROWS: ReadonlyArray<Row> = [
  // /schedule: the empty 400s name the missing header and what was sent instead
  { endpoint: "/schedule", name: "no key", method: "POST", path: "/schedule", headers: () => ({ "ttr-url": URL_OK }), status: 400, responseBody: "", hint: "missing header ttr-api-key" },
  {
    endpoint: "/schedule", name: "the key as a Bearer token", method: "POST", path: "/schedule", headers: bearer({ "ttr-url": URL_OK, "ttr-scheduled-at": FAR }),
    status: 400, responseBody: "",
    hint: "missing header ttr-api-key (Authorization: Bearer is not read by /schedule (it is forwarded to the target); send the key in ttr-api-key)"
  },
  {
    endpoint: "/schedule", name: "ttr-target instead of ttr-url", method: "POST", path: "/schedule", headers: withKey({ "ttr-target": URL_OK, "ttr-scheduled-at": FAR }),
    status: 400, responseBody: "", hint: "missing header ttr-url (unknown header ttr-target)"
  },
  {
    endpoint: "/schedule", name: "ttr-apikey misspelt", method: "POST", path: "/schedule", headers: (key) => ({ "ttr-apikey": key, "ttr-url": URL_OK }),
    status: 400, responseBody: "", hint: "missing header ttr-api-key (got ttr-apikey: a misspelling of ttr-api-key?)"
  },
  {
    endpoint: "/schedule", name: "ttr-schedule-at misspelt", method: "POST", path: "/schedule", headers: withKey({ "ttr-url": URL_OK, "ttr-schedule-at": FAR }),
    status: 400, responseBody: error("BadRequest", "Invalid date: "),
    hint: "missing header ttr-scheduled-at (got ttr-schedule-at: a misspelling of ttr-scheduled-at?)"
  },
  {
    endpoint: "/schedule", name: "a bad date", method: "POST", path: "/schedule", headers: withKey({ "ttr-url": URL_OK, "ttr-scheduled-at": "tomorrow" }),
    status: 400, responseBody: error("BadRequest", "Invalid date: tomorrow"),
    hint: `"tomorrow" is not a date: use an ISO 8601 date (2030-01-15T09:00:00Z), now, now | add 10m (or subtract; s m h d w), or cron(*/5 * * * *[, Europe/Paris])`
  },
  {
    endpoint: "/schedule", name: "an operation with +", method: "POST", path: "/schedule", headers: withKey({ "ttr-url": URL_OK, "ttr-scheduled-at": "now + 10m" }),
    status: 400, responseBody: error("BadRequest", "Invalid date: now + 10m"), hint: "date operations follow a pipe: now | add 10m"
  },
  {
    endpoint: "/schedule", name: "a bare cron expression", method: "POST", path: "/schedule", headers: withKey({ "ttr-url": URL_OK, "ttr-scheduled-at": "*/5 * * * *" }),
    status: 400, responseBody: error("BadRequest", "Invalid date: */5 * * * *"),
    hint: "a cron schedule is written cron(*/5 * * * *), with a time zone cron(*/5 * * * *, Europe/Paris)"
  },
  {
    endpoint: "/schedule", name: "an invalid URL", method: "POST", path: "/schedule", headers: withKey({ "ttr-url": "nope", "ttr-scheduled-at": FAR }),
    status: 400, responseBody: error("BadRequest", "Invalid URL: nope"), hint: "Invalid URL: nope"
  },
  {
    endpoint: "/schedule", name: "an unknown key", method: "POST", path: "/schedule", headers: () => ({ "ttr-api-key": UNKNOWN_KEY, "ttr-url": URL_OK, "ttr-scheduled-at": FAR }),
    status: 401, responseBody: error("Unauthorized", "Invalid api key"), hint: "no live key matches: unknown, revoked, or of another timewheel database"
  },
  {
    endpoint: "/schedule", name: "an unknown trigger id", method: "PUT", path: "/schedule", headers: withKey({ "ttr-url": URL_OK, "ttr-scheduled-at": FAR, "ttr-trigger-id": UNKNOWN_ID }),
    status: 404, responseBody: error("NotFound", "Trigger not found"), hint: "Trigger not found"
  },

  // /cancel
  { endpoint: "/cancel", name: "no key", method: "DELETE", path: "/cancel", headers: () => ({ "ttr-trigger-id": UNKNOWN_ID }), status: 400, responseBody: "", hint: "missing header ttr-api-key" },
  {
    endpoint: "/cancel", name: "the key as a Bearer token", method: "DELETE", path: "/cancel", headers: bearer({ "ttr-trigger-id": UNKNOWN_ID }),
    status: 400, responseBody: "", hint: "missing header ttr-api-key (Authorization: Bearer is not accepted by /cancel; send the key in ttr-api-key)"
  },
  {
    endpoint: "/cancel", name: "no identifier", method: "DELETE", path: "/cancel", headers: withKey(),
    status: 400, responseBody: error("BadRequest", "Must provide either ttr-trigger-id or ttr-custom-key header"),
    hint: "Must provide either ttr-trigger-id or ttr-custom-key header"
  },
  { endpoint: "/cancel", name: "POST instead of DELETE", method: "POST", path: "/cancel", headers: withKey(), status: 404, responseBody: "", hint: "POST is not accepted by /cancel: use DELETE" },
  {
    endpoint: "/cancel", name: "nothing matches", method: "DELETE", path: "/cancel", headers: withKey({ "ttr-trigger-id": UNKNOWN_ID }),
    status: 404, responseBody: error("NotFound", "Job not found"), hint: "Job not found"
  },

  // /declare
  {
    endpoint: "/declare", name: "another Content-Type", method: "POST", path: "/declare", headers: withKey({ "content-type": "text/plain" }), body: "{}",
    status: 415, responseBody: "Unsupported content-type: text/plain", hint: "Content-Type must be application/json, got text/plain"
  },
  { endpoint: "/declare", name: "invalid JSON", method: "POST", path: "/declare", headers: withKey(JSON_TYPE), body: `{"tag":`, status: 400, responseBody: "", hint: /^body is not valid JSON: / },
  { endpoint: "/declare", name: "an empty body", method: "POST", path: "/declare", headers: withKey(JSON_TYPE), body: "", status: 400, responseBody: "", hint: "body is empty: send a JSON object" },
  { endpoint: "/declare", name: "no items", method: "POST", path: "/declare", headers: withKey(JSON_TYPE), body: `{"tag":"t"}`, status: 400, responseBody: "", hint: "items is required (a list)" },
  {
    endpoint: "/declare", name: "an item without url", method: "POST", path: "/declare", headers: withKey(JSON_TYPE), body: `{"tag":"t","items":[{"url":"u"},{"customKey":"k"}]}`,
    status: 400, responseBody: "", hint: "items[1].url is required (a string)"
  },
  {
    endpoint: "/declare", name: "no credentials", method: "POST", path: "/declare", headers: () => JSON_TYPE, body: `{"tag":"t","items":[]}`,
    status: 401, responseBody: error("Unauthorized", "Unauthorized"), hint: "no credentials: send the ttr-api-key header, Authorization: Bearer <key>, or a dashboard session"
  },
  {
    endpoint: "/declare", name: "Basic instead of Bearer", method: "POST", path: "/declare", headers: (key) => ({ ...JSON_TYPE, authorization: `Basic ${key}` }), body: `{"tag":"t","items":[]}`,
    status: 401, responseBody: error("Unauthorized", "Unauthorized"), hint: `Authorization must be "Bearer <key>", got scheme Basic`
  },
  {
    endpoint: "/declare", name: "a bad scheduledAt", method: "POST", path: "/declare", headers: bearer(JSON_TYPE), body: `{"tag":"t","items":[{"url":"u","scheduledAt":"soon"}]}`,
    status: 400, responseBody: error("BadRequest", "Item (no customKey): Invalid date: soon"),
    hint: `Item (no customKey): "soon" is not a date: use an ISO 8601 date (2030-01-15T09:00:00Z), now, now | add 10m (or subtract; s m h d w), or cron(*/5 * * * *[, Europe/Paris])`
  },
  {
    endpoint: "/declare", name: "a trailing slash", method: "POST", path: "/declare/", headers: withKey(JSON_TYPE), body: "{}",
    status: 404, responseBody: "", hint: "no endpoint POST /declare/ (paths are exact: no trailing slash)"
  },

  // /bulk
  {
    endpoint: "/bulk", name: "upserts not a list", method: "POST", path: "/bulk", headers: withKey(JSON_TYPE), body: `{"upserts":{}}`,
    status: 400, responseBody: "", hint: "upserts must be a list"
  },
  {
    endpoint: "/bulk", name: "a malformed cancels entry", method: "POST", path: "/bulk", headers: withKey(JSON_TYPE), body: `{"cancels":["${UNKNOWN_ID}",{"id":"a","tag":"b"}]}`,
    status: 400, responseBody: "", hint: "cancels[1] must be a trigger id, or an object with exactly one of id, customKey, tag"
  },
  {
    endpoint: "/bulk", name: "a null field", method: "POST", path: "/bulk", headers: withKey(JSON_TYPE), body: `{"upserts":[{"url":"u","title":null}]}`,
    status: 400, responseBody: "", hint: "upserts[0].title must be a string, got null"
  },
  {
    endpoint: "/bulk", name: "a repeated key", method: "POST", path: "/bulk", headers: withKey(JSON_TYPE), body: `{"upserts":[{"url":"u","customKey":"k"},{"url":"u","customKey":"k"}]}`,
    status: 400, responseBody: error("BadRequest", "Duplicate customKey in upserts: k"), hint: "Duplicate customKey in upserts: k"
  },

  // /tag-policies
  {
    endpoint: "/tag-policies", name: "a malformed throughput window", method: "POST", path: "/tag-policies", headers: withKey(JSON_TYPE), body: `{"tag":"t","throughput":{"1w":1}}`,
    status: 400, responseBody: "", hint: `throughput window "1w": a whole number followed by s, m, h or d`
  },
  {
    endpoint: "/tag-policies", name: "no tag on create", method: "POST", path: "/tag-policies", headers: withKey(JSON_TYPE), body: `{"maxConcurrent":1}`,
    status: 400, responseBody: "", hint: "tag is required"
  },
  {
    endpoint: "/tag-policies", name: "a message with a non-ASCII character", method: "POST", path: "/tag-policies", headers: withKey(JSON_TYPE), body: `{"tag":"t","maxConcurrent":0}`,
    status: 400, responseBody: error("BadRequest", "maxConcurrent must be ≥ 1"), hint: "maxConcurrent must be >= 1"
  },
  {
    endpoint: "/tag-policies", name: "an unknown policy", method: "DELETE", path: `/tag-policies/${UNKNOWN_ID}`, headers: withKey(),
    status: 404, responseBody: error("NotFound", "Tag policy not found"), hint: "Tag policy not found"
  },
  {
    endpoint: "/tag-policies", name: "PATCH instead of PUT", method: "PATCH", path: `/tag-policies/${UNKNOWN_ID}`, headers: withKey(JSON_TYPE), body: "{}",
    status: 404, responseBody: "", hint: `PATCH is not accepted by /tag-policies/${UNKNOWN_ID}: use PUT or DELETE`
  },

  // the log reads and replay
  {
    endpoint: "replay", name: "invalid JSON", method: "POST", path: `/jobs/${UNKNOWN_ID}/executions`, headers: withKey(JSON_TYPE), body: "retry",
    status: 400, responseBody: "", hint: /^body is not valid JSON: /
  },
  {
    endpoint: "replay", name: "another triggeredBy", method: "POST", path: `/jobs/${UNKNOWN_ID}/executions`, headers: withKey(JSON_TYPE), body: `{"triggeredBy":"manual"}`,
    status: 400, responseBody: error("BadRequest", `triggeredBy must be "retry"`), hint: `triggeredBy must be "retry"`
  },
  {
    endpoint: "replay", name: "an unknown trigger", method: "POST", path: `/jobs/${UNKNOWN_ID}/executions`, headers: withKey(JSON_TYPE), body: `{"triggeredBy":"retry"}`,
    status: 404, responseBody: error("NotFound", "Job not found"), hint: "Job not found"
  },
  {
    endpoint: "GET /jobs", name: "a bad limit", method: "GET", path: "/jobs?limit=0", headers: withKey(),
    status: 400, responseBody: error("BadRequest", "limit must be an integer between 1 and 500"), hint: "limit must be an integer between 1 and 500"
  },
  {
    endpoint: "PUT /project/retry-policy", name: "invalid JSON", method: "PUT", path: "/project/retry-policy", headers: withKey(JSON_TYPE), body: "{",
    status: 400, responseBody: "", hint: /^body is not valid JSON: /
  },

  // /mcp: credentials, browsers, and the transport's own refusals
  {
    endpoint: "/mcp", name: "no credentials", method: "POST", path: "/mcp", headers: () => ({ ...JSON_TYPE, ...MCP_ACCEPT }), body: INITIALIZE,
    status: 401, responseBody: error("Unauthorized", "Unauthorized"), hint: "no credentials: send the ttr-api-key header or Authorization: Bearer <key>"
  },
  {
    endpoint: "/mcp", name: "an unknown key", method: "POST", path: "/mcp", headers: () => ({ ...JSON_TYPE, ...MCP_ACCEPT, authorization: `Bearer ${UNKNOWN_KEY}` }), body: INITIALIZE,
    status: 401, responseBody: error("Unauthorized", "Invalid api key"), hint: "no live key matches: unknown, revoked, or of another timewheel database"
  },
  {
    endpoint: "/mcp", name: "a browser's Origin", method: "POST", path: "/mcp", headers: withKey({ ...JSON_TYPE, ...MCP_ACCEPT, origin: "https://example.com" }), body: INITIALIZE,
    status: 403, responseBody: "", hint: "a browser's request (Origin header) is refused: /mcp is for servers and local tools"
  },
  {
    endpoint: "/mcp", name: "Accept without the event stream", method: "POST", path: "/mcp", headers: withKey({ ...JSON_TYPE, accept: "application/json" }), body: INITIALIZE,
    status: 406, responseBody: /* the transport's JSON-RPC error */ "*", hint: "Accept must list both application/json and text/event-stream"
  },

  // what no endpoint module renders: the router's 404s and a hand-built one
  { endpoint: "router", name: "an unknown path", method: "GET", path: "/nope", status: 404, responseBody: "", hint: "no endpoint GET /nope (the API is described at /openapi/json and /docs)" },
  { endpoint: "router", name: "a method a path does not take", method: "DELETE", path: "/declare", headers: withKey(), status: 404, responseBody: "", hint: "DELETE is not accepted by /declare: use POST" },
  {
    endpoint: "/openapi/json", name: "a query", method: "GET", path: "/openapi/json?x=1", status: 404, responseBody: "",
    hint: "the document is at exactly /openapi/json (no trailing slash, no query)"
  },
  {
    endpoint: "dashboard assets", name: "an unknown asset", method: "GET", path: "/dashboard/assets/nope.js", status: 404, responseBody: "",
    hint: "HTTP 404 for GET /dashboard/assets/nope.js"
  }
]

/** Printable ASCII only: what docs/errors.md "Error hints" allows in the header. */
const PLAIN_ASCII = /^[\x20-\x7e]+$/

const assertRow = (row: Row, response: TestResponse) => {
  const label = `${row.endpoint}, ${row.name}: ${response.status} ${response.text}`
  assert.strictEqual(response.status, row.status, label)
  if (row.responseBody !== "*") assert.strictEqual(response.text, row.responseBody, label)
  const hint = response.headers["timewheel-error"]
  assert.isString(hint, label)
  assert.match(hint as string, PLAIN_ASCII, label)
  if (typeof row.hint === "string") assert.strictEqual(hint, row.hint, label)
  else assert.match(hint as string, row.hint, label)
}

layer(testServerLayer(), { timeout: "120 seconds" })("error hints (docs/errors.md)", (it) => {
  describe("every 4xx names what was wrong in Timewheel-Error; bodies stay as documented", () => {
    for (const row of ROWS) {
      it.effect(`${row.endpoint}: ${row.name} → ${row.status}`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const key = yield* server.newKey()
          const response = yield* server.call(row.method, row.path, {
            headers: row.headers?.(key) ?? {},
            ...(row.body === undefined ? {} : { body: row.body })
          })
          assertRow(row, response)
        }))
    }
  })

  describe("/schedule answers the trigger's status; a skipped one-shot says why in Timewheel-Warning", () => {
    const cases: ReadonlyArray<readonly [name: string, headers: Record<string, string>, status: string, warning: string | undefined]> = [
      ["a future date", { "ttr-scheduled-at": FAR }, "registered", undefined],
      ["now", { "ttr-scheduled-at": "now" }, "registered", undefined],
      ["a past date with run-missed", { "ttr-scheduled-at": "2020-01-01T00:00:00Z", "ttr-run-missed": "true" }, "registered", undefined],
      ["a generator", { "ttr-scheduled-at": "cron(0 9 * * *)" }, "active", undefined],
      [
        "a past date", { "ttr-scheduled-at": "2020-01-01T00:00:00Z" }, "skipped",
        "skipped: 2020-01-01T00:00:00.000Z is not in the future, so the trigger never fires (ttr-run-missed: true fires a past time at once)"
      ],
      [
        "a local time without an offset, read as UTC", { "ttr-scheduled-at": "2020-06-01T10:30 | add 1h" }, "skipped",
        `skipped: 2020-06-01T11:30:00.000Z is not in the future, so the trigger never fires (ttr-run-missed: true fires a past time at once); "2020-06-01T10:30 | add 1h" has no offset and was read as UTC`
      ]
    ]
    for (const [name, headers, status, warning] of cases) {
      it.effect(`${name} → ${status}`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const key = yield* server.newKey()
          const response = yield* server.call("POST", "/schedule", { headers: { "ttr-api-key": key, "ttr-url": URL_OK, ...headers } })
          assert.strictEqual(response.status, 200, response.text)
          assert.strictEqual(response.json().status, status)
          assert.strictEqual(response.headers["timewheel-warning"], warning)
          assert.isUndefined(response.headers["timewheel-error"])
        }))
    }
  })
})
