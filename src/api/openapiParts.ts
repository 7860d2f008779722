// Building blocks of the OpenAPI 3.1 document: shared schemas and the header parameters that carry
// the API key (SPEC: keys are header parameters, not a security scheme).

export type PathItem = Record<string, unknown>
export type Paths = Record<string, PathItem>

export const errorSchema = {
  type: "object",
  required: ["_tag", "message"],
  properties: { _tag: { type: "string" }, message: { type: "string" } }
} as const

export const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
})

export const emptyResponse = (description: string) => ({ description })

export const jsonResponseOf = (description: string, schema: unknown) => ({
  description,
  content: { "application/json": { schema } }
})

export const keyHeader = (prefix: string, required: boolean) => ({
  name: `${prefix}-api-key`,
  in: "header",
  required,
  description: required
    ? `API key (\`${prefix}_\` + 48 hex characters). The only credential accepted here.`
    : `API key. Either this header or \`Authorization: Bearer <key>\`; when both are sent only this one is checked.`,
  schema: { type: "string" }
})

export const bearerHeader = {
  name: "Authorization",
  in: "header",
  required: false,
  description: "`Bearer <API key>` (scheme name case-insensitive), as an alternative to the key header.",
  schema: { type: "string" }
} as const

/** Parameters of an endpoint that takes the key header or a Bearer token. */
export const keyOrBearer = (prefix: string) => [keyHeader(prefix, false), bearerHeader]

export const unauthorized = errorResponse("`Invalid api key` (unknown key) or `Unauthorized` (no credentials).")
