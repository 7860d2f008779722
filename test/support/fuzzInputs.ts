// Arbitrary requests for the fuzz test (test/api/fuzz.test.ts) and the long fuzz run (scripts/fuzz):
// /schedule and /cancel with any mix of the prefix headers (values valid, borderline and garbage,
// Latin-1 bytes included), any method and forwarded headers and bodies; the JSON endpoints' bodies
// (PUT /project/retry-policy, POST /jobs/{id}/executions) with any JSON, broken JSON and content
// types; the query parameters of GET /jobs and GET /executions as arbitrary percent-encoded bytes
// (NUL, encoded surrogates, invalid UTF-8), repeated or empty; path ids; and POST /actions bodies
// (a replay's URL is the loopback discard port or invalid, never another host).
// Loopback only: every target URL a request could make valid is on 127.0.0.1, so whatever gets
// scheduled is delivered to a closed loopback port and nowhere else.
// The other endpoint families are fuzzFamilies.ts's.
import fc from "fast-check"
import { SAFE_TARGET } from "./fuzzShapes.ts"

export interface FuzzRequest {
  readonly method: string
  readonly path: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body?: string | Uint8Array
  /** The ops listener rather than the API (the default). */
  readonly port?: "ops"
}

/** Characters undici sends in a header value: tab, visible ASCII and space, and Latin-1 0x80–0xFF. */
const headerChar = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
  { weight: 1, arbitrary: fc.constant(0x09) },
  { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0xff }) }
).map((code) => String.fromCharCode(code))

const headerText = (maxLength = 40) => fc.string({ unit: headerChar, maxLength })

/** A header value as sent: Node drops leading and trailing spaces, so none are sent. */
const headerValue = (arbitrary: fc.Arbitrary<string>) => arbitrary.map((value) => value.trim())

const TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
/** Headers undici refuses to send or that frame the request itself. */
const FRAMING = new Set(["host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "expect", "te", "trailer", "proxy-connection"])
const headerName = fc.string({ unit: fc.constantFrom(...TOKEN_CHARS), minLength: 1, maxLength: 20 })
  .filter((name) => !FRAMING.has(name.toLowerCase()))

/** Any header value with a bias toward what the parsers care about. */
const garbage = fc.oneof(
  headerText(),
  fc.constantFrom("", " ", "0", "-1", "1e400", "NaN", "null", "true", "false", "[]", "{}", "%00", "\\u0000", "ÿÿ", "\u00e9\u00ff"),
  fc.integer().map(String),
  fc.double().map(String)
)

/** Valid values mostly, so that requests get past the checks, with garbage now and then. */
const mostly = (valid: fc.Arbitrary<string>, weight = 12) => fc.oneof({ weight, arbitrary: valid }, { weight: 1, arbitrary: garbage })

const isoDate = fc.date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true })
  .map((date) => date.toISOString())

const scheduledAt = fc.oneof(
  { weight: 3, arbitrary: isoDate },
  { weight: 3, arbitrary: fc.constantFrom("now | add 1h", "now | add 2d", "2099-01-01T00:00:00Z", "now", "now | subtract 1m") },
  fc.constantFrom("0000-01-01", "0001-01-01", "9999-12-31T23:59:59.999Z", "10000-01-01", "-000001-01-01", "2026-02-29", "now", "NOW"),
  fc.tuple(fc.constantFrom("now", "2099-01-01", "0001-01-01", "9999-12-31"), fc.array(fc.tuple(
    fc.constantFrom("add", "subtract", "plus", "ADD"),
    fc.oneof(fc.integer({ min: -1e6, max: 1e6 }).map(String), fc.bigInt().map(String)),
    fc.constantFrom("s", "m", "h", "d", "w", "y", "")
  ), { maxLength: 3 })).map(([base, ops]) => [base, ...ops.map(([op, n, unit]) => `${op} ${n}${unit}`)].join(" | ")),
  // recurring values that rarely fire (a generator's instances go to the safe target too)
  fc.constantFrom("cron(0 0 1 1 *)", "cron(0 0 1 1 *, Europe/Paris)", "cron(0 0 1 1 *, Nowhere/City)", "cron(* * *)", "cron(", "cron()",
    "cron(0 0 30 2 *)", "cron(H H 1 1 *)", "cron(0 0 L 1 *)", "cron(0 0 1 1 5L)", "cron(@yearly)", "cron(0 0 1 1 * 2030)"),
  fc.tuple(fc.constant("cron("), headerText(20), fc.constant(")")).map((parts) => parts.join("")),
  garbage
)

/** A URL that is either invalid or on the safe target; never another host. */
const safeUrl = mostly(
  fc.tuple(fc.constantFrom("/", "/hook", "/a/b", "/?q="), headerText(20)).map(([path, rest]) => `${SAFE_TARGET}${path}${encodeURI(rest)}`)
).map((value) => {
  try {
    const url = new URL(value.trim())
    if ((url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "127.0.0.1") return `${SAFE_TARGET}/`
  } catch {
    // not a URL at all: a 400 Invalid URL
  }
  return value
})

const tags = fc.oneof(
  { weight: 5, arbitrary: fc.array(fc.stringMatching(/^[a-z0-9_-]{1,12}$/), { maxLength: 12 }).map((list) => list.join(",")) },
  { weight: 1, arbitrary: headerText(60) }
)

const uuidLike = fc.oneof(fc.uuid(), headerText(36), fc.constant("01890000-0000-7000-8000-000000000000"))

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 30 })

/** The prefix headers of /schedule, each present or not, with valid, borderline or garbage values. */
const prefixHeaders = (key: string) =>
  fc.record({
    "ttr-api-key": mostly(fc.constant(key), 20),
    "ttr-url": safeUrl,
    "ttr-scheduled-at": scheduledAt,
    "ttr-custom-key": headerValue(mostly(headerText(30))),
    "ttr-tags": tags,
    "ttr-title": headerValue(mostly(printable)),
    "ttr-run-missed": mostly(fc.constantFrom("true", "false", "TRUE")),
    "ttr-retry-strategy": mostly(fc.constantFrom("none", "fixed", "exponential")),
    "ttr-retry-max-attempts": mostly(fc.integer({ min: 1, max: 10 }).map(String)),
    "ttr-retry-initial-delay-seconds": mostly(fc.integer({ min: 0, max: 100_000 }).map(String)),
    "ttr-retry-max-delay-seconds": mostly(fc.integer({ min: 0, max: 100_000 }).map(String)),
    "ttr-retry-jitter": mostly(fc.constantFrom("true", "false")),
    "ttr-retry-on": mostly(fc.constantFrom("network_only", "5xx_and_network", "non_2xx"))
  }, { requiredKeys: ["ttr-api-key", "ttr-url", "ttr-scheduled-at"] }).chain((headers) =>
    // an edit by id now and then (mostly unknown ids: 404)
    fc.oneof({ weight: 8, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: uuidLike }).map((id) => (id === null ? headers : { ...headers, "ttr-trigger-id": id })))

const body = fc.oneof(
  fc.constant(undefined),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? "null")
)

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PURGE"] as const

/** /schedule (any method) and DELETE /cancel with arbitrary headers and bodies. */
export const scheduleRequest = (key: string): fc.Arbitrary<FuzzRequest> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.record({
      method: fc.constantFrom(...METHODS),
      prefix: prefixHeaders(key),
      extra: fc.array(fc.tuple(headerName, headerValue(headerText())), { maxLength: 4 }),
      contentType: fc.option(fc.constantFrom("application/json", "text/plain; charset=latin1", "application/octet-stream", "x/\u00ff")),
      body
    }).map(({ method, prefix, extra, contentType, body }): FuzzRequest => ({
      method,
      path: "/schedule",
      headers: [
        ...Object.entries(prefix).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ...extra.filter(([name]) => !name.toLowerCase().startsWith("ttr-") && name.toLowerCase() !== "content-type"),
        ...(contentType === null ? [] : [["content-type", contentType] as const])
      ],
      ...(body === undefined || method === "GET" || method === "HEAD" ? {} : { body })
    })) },
    { weight: 1, arbitrary: fc.record({
      id: fc.option(uuidLike, { freq: 2 }),
      customKey: fc.option(headerValue(mostly(headerText(30))), { freq: 2 }),
      apiKey: fc.oneof({ weight: 5, arbitrary: fc.constant(key) }, { weight: 1, arbitrary: garbage })
    }).map(({ id, customKey, apiKey }): FuzzRequest => ({
      method: "DELETE",
      path: "/cancel",
      headers: [
        ["ttr-api-key", apiKey],
        ...(id === null ? [] : [["ttr-trigger-id", id] as const]),
        ...(customKey === null ? [] : [["ttr-custom-key", customKey] as const])
      ]
    })) }
  )

const POLICY_FIELDS = ["retryStrategy", "retryMaxAttempts", "retryInitialDelaySeconds", "retryMaxDelaySeconds", "retryJitter", "retryOn"] as const

const jsonAny = fc.jsonValue({ maxDepth: 3 })
const policyValue = fc.oneof(
  jsonAny,
  fc.constantFrom("none", "fixed", "exponential", "network_only", "5xx_and_network", "non_2xx", "\u0000", "\ud800", 0, -1, 1, 86_400, 86_401, 2 ** 31, 1.5, null, true)
)

const jsonBody = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(fc.constantFrom(...POLICY_FIELDS, "triggeredBy", "x"), policyValue, { maxKeys: 7 }).map((o) => JSON.stringify(o)) },
  { weight: 2, arbitrary: fc.record({ triggeredBy: fc.oneof(fc.constant("retry"), jsonAny) }).map((o) => JSON.stringify(o)) },
  { weight: 1, arbitrary: jsonAny.map((value) => JSON.stringify(value) ?? "null") },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 1, arbitrary: fc.constantFrom("", "{", "{\"retryStrategy\":\"\\u0000\"}", "{\"retryOn\":\"\\ud800\"}", "[1,2", "\u0000", "{\"a\":1}x") }
)

const contentType = fc.option(fc.constantFrom("application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain", "", "application/x\u00ff"))

/** The JSON endpoints: PUT /project/retry-policy and POST /jobs/{id}/executions. */
export const jsonRequest = (key: string, jobIds: ReadonlyArray<string>): fc.Arbitrary<FuzzRequest> =>
  fc.record({
    target: fc.oneof(
      fc.constant("/project/retry-policy"),
      fc.oneof(...(jobIds.length > 0 ? [fc.constantFrom(...jobIds)] : []), uuidLike.map(encodeURIComponent)).map((id) => `/jobs/${id}/executions`)
    ),
    body: jsonBody,
    contentType,
    bearer: fc.boolean()
  }).map(({ target, body, contentType, bearer }): FuzzRequest => ({
    method: target === "/project/retry-policy" ? "PUT" : "POST",
    path: target,
    headers: [
      bearer ? ["authorization", `Bearer ${key}`] : ["ttr-api-key", key],
      ...(contentType === null ? [] : [["content-type", contentType] as const])
    ],
    body
  }))

const percentEncoded = fc.uint8Array({ maxLength: 12 }).map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, "0")}`).join(""))

const queryValue = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom("%00", "a%00b", "%00%00", "%ED%A0%80", "%ED%B0%80", "%C0%80", "%EF%BF%BF") },
  percentEncoded,
  fc.constantFrom("", "%00", "%ED%A0%80", "%C3", "%", "%zz", "registered", "completed", "job", "generator", "succeeded", "failed",
    "1", "500", "501", "0", "true", "false", "200", "599", "01890000-0000-7000-8000-000000000000", "AAAA", "a+b", "%2B",
    "2030-01-01", "0000-01-01", "9999-12-31T23:59:59.999Z", "2030-01-01T00:00:00%2B14:00", "10000-01-01"),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.string({ unit: "grapheme", maxLength: 10 }).map(encodeURIComponent)
)

const JOBS_PARAMS = ["status", "kind", "tag", "customKey", "deadLetter", "scheduledFrom", "scheduledTo", "limit", "cursor"] as const
const EXECUTIONS_PARAMS = ["jobId", "customKey", "executionStatus", "httpStatus", "deadLetterOnly", "limit", "cursor"] as const

const query = (names: ReadonlyArray<string>) =>
  fc.array(fc.tuple(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: percentEncoded }), queryValue), { maxLength: 5 })
    .map((pairs) => (pairs.length === 0 ? "" : `?${pairs.map(([name, value]) => `${name}=${value}`).join("&")}`))

/** GET /jobs and GET /executions with arbitrary query parameters, and the id paths with arbitrary ids. */
export const queryRequest = (key: string): fc.Arbitrary<FuzzRequest> =>
  fc.oneof(
    { weight: 3, arbitrary: query(JOBS_PARAMS).map((q) => `/jobs${q}`) },
    { weight: 3, arbitrary: query(EXECUTIONS_PARAMS).map((q) => `/executions${q}`) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom("/jobs/", "/executions/"), fc.oneof(percentEncoded, uuidLike.map(encodeURIComponent)), fc.constantFrom("", "/executions"))
      .map(([base, id, tail]) => `${base}${id === "" ? "x" : id}${base === "/jobs/" ? tail : ""}`) }
  ).map((path): FuzzRequest => ({ method: "GET", path, headers: [["ttr-api-key", key]] }))

const filterValue = fc.oneof(
  jsonAny,
  fc.constantFrom("registered", "completed", "job", "generator", "fuzz", "", "\u0000", "\ud800", true, false, "true",
    "2030-01-01", "0000-01-01", "9999-12-31T23:59:59.999Z", "2030-01-01T00:00:00+14:00", 1.5, null)
)
const FILTER_KEYS = ["status", "kind", "tag", "customKey", "deadLetter", "scheduledFrom", "scheduledTo", "x"] as const
/** A replay's URL: the safe loopback target, or one that fails validation (never another host). */
const replayUrl = fc.constantFrom(SAFE_TARGET, `${SAFE_TARGET}/x?y=1`, "ftp://127.0.0.1/x", "", "not a url", "\u0000", 5, null)
const replayHeaders = fc.dictionary(fc.oneof(headerName, fc.constantFrom("Host", "ttr-url", "bad name", "content-type")), fc.oneof(headerText(), fc.constantFrom("a\r\nb", 1)), { maxKeys: 3 })

/** A POST /actions body: cancel and replay by filter, dry runs, overrides, any JSON, broken JSON. */
export const actionBody: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.record({
    action: fc.oneof({ weight: 4, arbitrary: fc.constantFrom("cancel", "replay") }, { weight: 1, arbitrary: jsonAny }),
    filter: fc.oneof({ weight: 6, arbitrary: fc.dictionary(fc.constantFrom(...FILTER_KEYS), filterValue, { maxKeys: 4 }) }, { weight: 1, arbitrary: jsonAny }),
    dryRun: fc.oneof(fc.boolean(), jsonAny),
    replay: fc.oneof(fc.record({ url: replayUrl, headers: replayHeaders }, { requiredKeys: [] }), jsonAny)
  }, { requiredKeys: ["action"] }).map((o) => JSON.stringify(o)) },
  { weight: 1, arbitrary: jsonAny.map((value) => JSON.stringify(value) ?? "null") },
  { weight: 1, arbitrary: fc.constantFrom("", "{", "{\"action\":\"cancel\",\"filter\":{\"tag\":\"\\u0000\"}}", "[1,2") }
)

/** GET /actions and GET /actions/{id}: arbitrary query parameters and ids. */
export const actionReadPath: fc.Arbitrary<string> = fc.oneof(
  query(["limit", "cursor"]).map((q) => `/actions${q}`),
  fc.oneof(percentEncoded, uuidLike.map(encodeURIComponent)).map((id) => `/actions/${id === "" ? "x" : id}`)
)

/** GET /dead-letters (the dashboard's, a session only): arbitrary limits and cursors. */
export const deadLettersPath: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("/dead-letters", "/dead-letters?limit=5", "/dead-letters?limit=500"),
  query(["limit", "cursor"]).map((q) => `/dead-letters${q}`)
)

/** POST /actions bodies (cancel and replay by filter, dry runs, overrides) and GET /actions, /actions/{id}. */
export const actionRequest = (key: string): fc.Arbitrary<FuzzRequest> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({
      body: actionBody,
      contentType
    }).map(({ body, contentType }): FuzzRequest => ({
      method: "POST",
      path: "/actions",
      headers: [["ttr-api-key", key], ...(contentType === null ? [] : [["content-type", contentType] as const])],
      body
    })) },
    { weight: 1, arbitrary: actionReadPath.map((path): FuzzRequest => ({ method: "GET", path, headers: [["ttr-api-key", key]] })) }
  )

/** Every kind of request, weighted toward /schedule. */
export const anyRequest = (key: string, jobIds: ReadonlyArray<string>): fc.Arbitrary<FuzzRequest> =>
  fc.oneof(
    { weight: 4, arbitrary: scheduleRequest(key) },
    { weight: 2, arbitrary: jsonRequest(key, jobIds) },
    { weight: 3, arbitrary: queryRequest(key) },
    { weight: 1, arbitrary: actionRequest(key) }
  )
