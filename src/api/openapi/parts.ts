// Building blocks of the OpenAPI 3.1 document: shared schemas, responses, and the security schemes
// that carry the credentials.

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

/**
 * The credentials as security schemes (docs/README.md "Typed clients": generated clients and
 * "Authorize" buttons carry them; /openapi/json has them as header parameters): the key header,
 * the key as a Bearer token, and the dashboard's session cookie.
 */
export const securitySchemes = (prefix: string) => ({
  apiKey: {
    type: "apiKey",
    in: "header",
    name: `${prefix}-api-key`,
    description: `API key (\`${prefix}_\` + 48 hex characters), created in the dashboard or with \`npm run cli -- key create <project>\`. When it is sent with a Bearer token, only this one is checked.`
  },
  bearer: {
    type: "http",
    scheme: "bearer",
    description: "The API key as `Authorization: Bearer <key>` (scheme name case-insensitive). Not on /schedule and /cancel, which forward Authorization to the target."
  },
  session: {
    type: "apiKey",
    in: "cookie",
    name: "__Host-timewheel-session",
    description: "A dashboard session (POST /session). On the shared endpoints it names its project in the `Timewheel-Project` header; its changes must carry this host's `Origin`."
  }
})

/** /schedule and /cancel: the key header only. */
export const KEY_ONLY = [{ apiKey: [] }]
/** The JSON API: the key header, a Bearer token, or a dashboard session. */
export const KEY_BEARER_OR_SESSION = [{ apiKey: [] }, { bearer: [] }, { session: [] }]
/** /mcp: the key header or a Bearer token. */
export const KEY_OR_BEARER = [{ apiKey: [] }, { bearer: [] }]
/** The dashboard's own endpoints. */
export const SESSION_ONLY = [{ session: [] }]
/** No credentials (the OpenAPI document, signing in). */
export const PUBLIC: ReadonlyArray<never> = []

export const unauthorized = errorResponse("`Invalid api key` (unknown key) or `Unauthorized` (no credentials).")
