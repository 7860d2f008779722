// /mcp without sessions (docs/mcp.md, no sessions): the streamable HTTP transport lets a server answer
// `initialize` without an `Mcp-Session-Id`, after which the client sends none and every request
// stands alone — any node answers any request, and nothing is kept per client. effect/ai's McpServer
// keeps a session per `initialize` of the protocol versions we speak (2025-06-18, 2025-03-26; its
// sessionless revision is one the official clients do not speak yet) until the client ends it, so
// its server runs behind this front as an in-process web handler, and each POST gets a session of
// its own for the time of that one exchange:
// - `initialize` is handed over as sent; its answer goes back without the session id, and that
//   session ends as soon as the answer is read;
// - any other message is preceded by an internal `initialize` (the version of the request's
//   `MCP-Protocol-Version`, else 2025-03-26 as the transport says; no client data), sent with that
//   session's id, and the session ends once the answer is read (or the client went away);
// - a session id a client sends is ignored; DELETE, like GET, is 405 (`Allow: POST`);
// - a JSON-RPC batch of more than MAX_MCP_BATCH messages is an empty 400 (the server's own answer to a
//   batch it does not take): effect/ai's server never answers one of some thousands.
// Before any of that every request is checked, in this order: the exact path (else the router's empty
// 404), no `Origin` header (a browser's request: empty 403), then the credentials as every endpoint
// answers them (401, 503); the key's project is the McpCaller of that request's tool calls. A body over
// MAX_MCP_BODY_BYTES, or nested deeper than MAX_JSON_DEPTH (its decoders would overflow the stack),
// is not handed over: the server answers it as a JSON-RPC parse error.
import * as ByteSize from "effect/ByteSize"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "effect/http"
import { nestsDeeperThan } from "../../domain/jsonDepth.ts"
import { Metrics, type MetricsShape } from "../../metrics/metrics.ts"
import { authenticateKeyOrBearer } from "../auth.ts"
import { EmptyForbidden, EmptyNotFound, ERROR_HEADER, renderApiError, withHint } from "../errors.ts"
import { MCP_PATH } from "../openapi/mcp.ts"
import { McpCaller } from "./toolParts.ts"

/** The largest JSON-RPC message read (as /declare and /bulk bodies). */
export const MAX_MCP_BODY_BYTES = 16 * 1024 * 1024
/** The most messages of a JSON-RPC batch (2025-03-26 has batches; 2025-06-18 none): a longer one is an empty 400. */
export const MAX_MCP_BATCH = 100

const SESSION_ID = "mcp-session-id"
const PROTOCOL_VERSION = "mcp-protocol-version"
/** What a request without MCP-Protocol-Version speaks (MCP 2025-06-18, "Protocol Version Header"). */
const DEFAULT_PROTOCOL_VERSION = "2025-03-26"
/** The request headers the MCP transport reads (never the client's session id). */
const FORWARDED = ["content-type", "accept", PROTOCOL_VERSION] as const
/** Where the in-process server is reached (its router matches the path only). */
const INTERNAL_URL = `http://mcp.internal${MCP_PATH}`

/** effect/ai's MCP server as a web handler (HttpEffect.toWebHandlerWith), one request root per call. */
export type McpWebHandler = (request: Request, context: Context.Context<McpCaller>) => Promise<Response>

/** An answer of the in-process server, read whole. */
interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: Uint8Array
}

/** The `initialize` the server gets before a message of a client that has no session. */
const internalInitialize = (protocolVersion: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name: "timewheel-stateless-front", version: "1" } }
  })

/** The JSON-RPC message (or batch) a body holds; undefined when it is not JSON. */
const messageOf = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

const isInitialize = (message: unknown): boolean =>
  typeof message === "object" && message !== null && (message as { readonly method?: unknown }).method === "initialize"

/** What the transport's own 4xx answers mean (docs/errors.md "Error hints"). */
const TRANSPORT_HINTS: Readonly<Record<number, string>> = {
  400: "not a valid MCP message, or an unsupported MCP-Protocol-Version",
  406: "Accept must list both application/json and text/event-stream",
  413: `request body larger than ${MAX_MCP_BODY_BYTES} bytes`,
  415: "Content-Type must be application/json"
}

/** The path, origin and credentials checks; the project of the key, or the answer refusing the request. */
const admission = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = request.url.split("?", 1)[0]
  if (path !== MCP_PATH) {
    return { refused: renderApiError(new EmptyNotFound({ hint: `no endpoint ${request.method} ${path} (the MCP server is at exactly ${MCP_PATH})` })) } as const
  }
  if (request.headers["origin"] !== undefined) {
    return { refused: renderApiError(new EmptyForbidden({ hint: "a browser's request (Origin header) is refused: /mcp is for servers and local tools" })) } as const
  }
  const principal = yield* Effect.result(authenticateKeyOrBearer(request))
  if (principal._tag === "Failure") return { refused: renderApiError(principal.failure) } as const
  return { projectId: principal.success.projectId } as const
})

/** /mcp: see the header comment. */
export const statelessMcp = (handler: McpWebHandler) => {
  const exchange = (caller: Context.Context<McpCaller>, init: RequestInit) =>
    Effect.promise((signal) =>
      handler(new Request(INTERNAL_URL, { ...init, signal }), caller).then(async (response): Promise<Answer> => ({
        status: response.status,
        headers: response.headers,
        body: new Uint8Array(await response.arrayBuffer())
      })))
  /** The session an answer opened (counted as open until the server confirms its end), if any. */
  const opened = (metrics: MetricsShape, answer: Answer) => {
    const sessionId = answer.headers.get(SESSION_ID)
    if (sessionId !== null) metrics.mcpSession("opened")
    return sessionId
  }
  /** Ends a session (its requests still running are interrupted); nothing when there is none. */
  const end = (metrics: MetricsShape, caller: Context.Context<McpCaller>, sessionId: string | null) =>
    sessionId === null ? Effect.void : Effect.map(exchange(caller, { method: "DELETE", headers: { [SESSION_ID]: sessionId } }), (answer) => {
      if (answer.status === 204) metrics.mcpSession("ended")
    })

  return Effect.gen(function*() {
    const metrics = yield* Metrics
    const admitted = yield* admission
    if ("refused" in admitted) return admitted.refused
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.method !== "POST") {
      return withHint(`${request.method} /mcp: the server keeps no sessions, send every message by POST`)(
        HttpServerResponse.empty({ status: 405, headers: { allow: "POST" } })
      )
    }
    const caller = Context.make(McpCaller, { projectId: admitted.projectId })
    const text = yield* request.text.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_MCP_BODY_BYTES)),
      Effect.map((text) => (nestsDeeperThan(text) ? "" : text)),
      Effect.orElseSucceed(() => "")
    )
    const headers: Record<string, string> = {}
    for (const name of FORWARDED) {
      const value = request.headers[name]
      if (value !== undefined) headers[name] = value
    }
    const post = (sessionId: string | null) =>
      exchange(caller, { method: "POST", headers: sessionId === null ? headers : { ...headers, [SESSION_ID]: sessionId }, body: text })

    const message = messageOf(text)
    // effect/ai's server stops answering a batch of some thousands of messages (its request never ends)
    if (Array.isArray(message) && message.length > MAX_MCP_BATCH) {
      return withHint(`a batch of more than ${MAX_MCP_BATCH} messages`)(HttpServerResponse.empty({ status: 400 }))
    }
    const answer = isInitialize(message)
      // the client's own initialize opens the session; it ends once its answer is read
      ? yield* Effect.acquireRelease(post(null), (answer) => end(metrics, caller, opened(metrics, answer))).pipe(Effect.scoped)
      : yield* Effect.acquireUseRelease(
        Effect.map(
          exchange(caller, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
            body: internalInitialize(headers[PROTOCOL_VERSION] ?? DEFAULT_PROTOCOL_VERSION)
          }),
          (initialized) => opened(metrics, initialized)
        ),
        post,
        (sessionId) => end(metrics, caller, sessionId)
      )
    const answerHeaders = new Headers(answer.headers)
    answerHeaders.delete(SESSION_ID)
    const response = HttpServerResponse.fromWeb(new Response(answer.body.byteLength === 0 ? null : answer.body, { status: answer.status, headers: answerHeaders }))
    const hint = TRANSPORT_HINTS[answer.status]
    return hint === undefined || answerHeaders.has(ERROR_HEADER) ? response : withHint(hint)(response)
  })
}
