// An MCP client for the tests of POST /mcp: the official TypeScript SDK's client over HTTPS to the
// in-process service (its self-signed certificate accepted for loopback only), and tool calls read as
// the JSON they answer, successful or failed.
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type * as Scope from "effect/Scope"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { fetch as undiciFetch } from "undici"
import { insecureAgent, TestServer } from "./server.ts"

/** The certificate is self-signed: accepted only for the in-process service on loopback. */
const loopbackFetch = ((url: string | URL, init?: RequestInit) => {
  const host = new URL(url).hostname
  if (host !== "127.0.0.1") throw new Error(`the test client only talks to loopback, not ${host}`)
  return undiciFetch(url, { ...(init as object), dispatcher: insecureAgent })
}) as unknown as typeof fetch

/** An MCP client connected to /mcp with these request headers (closed with the scope). */
export const connect = (headers: Record<string, string>): Effect.Effect<{ client: Client; transport: StreamableHTTPClientTransport }, unknown, TestServer | Scope.Scope> =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), {
      requestInit: { headers },
      fetch: loopbackFetch
    })
    const client = new Client({ name: "timewheel-test", version: "1.0.0" })
    yield* Effect.acquireRelease(
      Effect.tryPromise(() => client.connect(transport)),
      () => Effect.promise(() => client.close())
    )
    return { client, transport }
  })

export interface ToolAnswer {
  readonly isError: boolean
  readonly json: any
}

export const callTool = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.map(Effect.promise(() => client.callTool({ name, arguments: args })), (result): ToolAnswer => {
    const content = result.content as Array<{ type: string; text: string }>
    assert.strictEqual(content.length, 1, JSON.stringify(result))
    const json = JSON.parse(content[0]!.text)
    if (result.isError !== true) assert.deepStrictEqual(result.structuredContent, json)
    return { isError: result.isError === true, json }
  })

/** A successful tool call's JSON. */
export const ok = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.map(callTool(client, name, args), (answer) => {
    assert.isFalse(answer.isError, `${name}: ${JSON.stringify(answer.json)}`)
    return answer.json
  })

/** A failed tool call's `{_tag, message}`. */
export const failed = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.map(callTool(client, name, args), (answer) => {
    assert.isTrue(answer.isError, `${name} should fail: ${JSON.stringify(answer.json)}`)
    return answer.json as { _tag: string; message: string }
  })
