// Building blocks of the MCP tools' definitions (mcp/tools.ts, mcp/bulkTools.ts): the caller's project,
// described schemas, and the annotations each tool carries (effect/ai's defaults claim destructive).
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { Tool } from "effect/ai"

/** The project of the key that authenticated the current /mcp request (mcp/server.ts provides it). */
export class McpCaller extends Context.Service<McpCaller, { readonly projectId: string }>()("timewheel/McpCaller") {}

export const described = <S extends Schema.Top>(schema: S, description: string): S["Rebuild"] => schema.annotate({ description })

export const optional = <S extends Schema.Top>(schema: S, description: string) => Schema.optionalKey(described(schema, description))

export const readOnly = <T extends Tool.Any>(tool: T): T =>
  tool.annotate(Tool.Readonly, true).annotate(Tool.Destructive, false).annotate(Tool.Idempotent, true).annotate(Tool.OpenWorld, false) as T

export const writes = <T extends Tool.Any>(tool: T, options: { readonly destructive: boolean; readonly idempotent: boolean; readonly openWorld: boolean }): T =>
  tool.annotate(Tool.Destructive, options.destructive).annotate(Tool.Idempotent, options.idempotent)
    .annotate(Tool.OpenWorld, options.openWorld) as T

export const titled = <T extends Tool.Any>(tool: T, title: string): T => tool.annotate(Tool.Title, title) as T

/** What every tool acting on the caller's project needs. */
export const dependencies = [McpCaller]
