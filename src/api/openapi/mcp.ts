// The OpenAPI fragment of POST /mcp (the MCP server itself is mcp/server.ts; it keeps no sessions, so
// there is no DELETE to end one).
import { emptyResponse, KEY_OR_BEARER, type Paths, unauthorized } from "./parts.ts"

export const MCP_PATH = "/mcp"

const jsonRpcMessage = {
  type: "object",
  description: "A JSON-RPC 2.0 request, notification or response of the Model Context Protocol (or a list of them)."
}

const mcpHeaders = [
  {
    name: "MCP-Protocol-Version",
    in: "header",
    required: false,
    description: "`2025-06-18` or `2025-03-26`, as negotiated by `initialize`; without it a request is read as `2025-03-26`.",
    schema: { type: "string" }
  }
]

export const mcpPaths = (): Paths => ({
  [MCP_PATH]: {
    post: {
      operationId: "mcp",
      summary: "MCP tool server for AI assistants",
      description:
        "Model Context Protocol over the streamable HTTP transport (protocol versions 2025-06-18 and 2025-03-26). " +
        "Point an MCP client at this URL with the API key in the key header or as a Bearer token; its tools " +
        "(`tools/list`) schedule, cancel, declare and bulk-change triggers, cancel or replay by filter, read jobs and executions, replay, manage " +
        "tag policies and the project retry policy, and preview cron values. `Accept` must list `application/json` " +
        "and `text/event-stream`. Requests with an `Origin` header (browsers) are refused. The server keeps no sessions: " +
        "`initialize` gives no `Mcp-Session-Id`, every request stands alone (any node of a cluster answers it), and a " +
        "session id sent anyway is ignored; other methods (`GET`, `DELETE`, …) are `405`.",
      security: KEY_OR_BEARER,
      parameters: mcpHeaders,
      requestBody: { required: true, content: { "application/json": { schema: jsonRpcMessage } } },
      responses: {
        200: {
          description: "The JSON-RPC answer: JSON, or a `text/event-stream` of messages ending with the answer. " +
            "A failed tool call is a result with `isError: true` carrying `{\"_tag\",\"message\"}` as the HTTP endpoint would answer.",
          content: { "application/json": { schema: jsonRpcMessage }, "text/event-stream": { schema: { type: "string" } } }
        },
        202: emptyResponse("A notification or response, accepted."),
        400: emptyResponse("A JSON-RPC error: invalid message or unsupported protocol version; empty: a batch of more than 100 messages."),
        401: unauthorized,
        403: emptyResponse("The request has an `Origin` header: browsers are not allowed."),
        404: emptyResponse("A path other than `/mcp` exactly."),
        406: emptyResponse("`Accept` does not list both `application/json` and `text/event-stream`."),
        415: emptyResponse("A Content-Type other than application/json.")
      }
    }
  }
})
