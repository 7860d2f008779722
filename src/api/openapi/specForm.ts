// The paths of GET /openapi/json as the API's reference describes that document (docs/README.md,
// "Other public paths"): each operation's credentials, named in the fragments as security
// requirements (openapi/parts.ts), become header parameters — the key header, the Bearer
// Authorization header, and the dashboard's session cookie — and the operations of /schedule share
// one operation id. Pure.
import type { PathItem, Paths } from "./parts.ts"

/** The operation id the five methods of /schedule share. */
export const SCHEDULE_OPERATION_ID = "schedule"

type Requirement = Readonly<Record<string, ReadonlyArray<string>>>

/** The parameters that carry the credentials of these security requirements (one of them is needed). */
const credentialParameters = (prefix: string, security: ReadonlyArray<Requirement>) => {
  const schemes = new Set(security.flatMap((requirement) => Object.keys(requirement)))
  const alone = schemes.size === 1
  return [
    ...(schemes.has("apiKey")
      ? [{
        name: `${prefix}-api-key`,
        in: "header",
        required: alone,
        description: alone
          ? `API key (\`${prefix}_\` + 48 hex characters). The only credential accepted here.`
          : "API key. This header, or `Authorization: Bearer <key>`; when both are sent only this one is checked.",
        schema: { type: "string" }
      }]
      : []),
    ...(schemes.has("bearer")
      ? [{
        name: "Authorization",
        in: "header",
        required: false,
        description: "`Bearer <API key>` (scheme name case-insensitive), instead of the key header.",
        schema: { type: "string" }
      }]
      : []),
    ...(schemes.has("session")
      ? [{
        name: "__Host-timewheel-session",
        in: "cookie",
        required: alone,
        description: "A dashboard session (POST /session), naming its project in `Timewheel-Project`.",
        schema: { type: "string" }
      }]
      : [])
  ]
}

interface Operation {
  readonly operationId?: string
  readonly security?: ReadonlyArray<Requirement>
  readonly parameters?: ReadonlyArray<unknown>
  readonly [key: string]: unknown
}

const specOperation = (prefix: string, path: string, operation: Operation): Operation => {
  const { security = [], parameters = [], ...rest } = operation
  const credentials = credentialParameters(prefix, security)
  return {
    ...rest,
    ...(path === "/schedule" ? { operationId: SCHEDULE_OPERATION_ID } : {}),
    ...(credentials.length + parameters.length === 0 ? {} : { parameters: [...credentials, ...parameters] })
  }
}

/** The paths with every operation in the served document's form. */
export const specPaths = (prefix: string, paths: Paths): Paths =>
  Object.fromEntries(Object.entries(paths).map(([path, item]): [string, PathItem] => [
    path,
    Object.fromEntries(Object.entries(item).map(([method, operation]) => [method, specOperation(prefix, path, operation as Operation)]))
  ]))
