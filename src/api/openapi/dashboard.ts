// The dashboard's endpoints in the OpenAPI document (docs/dashboard.md): sign-in and sessions, projects,
// keys, alerts, the overview and the cancel button. They take only a session cookie (an API key in
// either header is 401); a session names its project in the Timewheel-Project header.
import { emptyResponse, errorResponse, jsonResponseOf, type Paths, PUBLIC, SESSION_ONLY } from "./parts.ts"

const projectHeader = {
  name: "Timewheel-Project",
  in: "header",
  required: true,
  description: "The id of the project the session acts on (missing or unknown: 400).",
  schema: { type: "string", format: "uuid" }
}

const originHeader = {
  name: "Origin",
  in: "header",
  required: true,
  description: "`https://` and this request's Host: a change from any other origin is 403 `Cross-origin request refused`.",
  schema: { type: "string" }
}

const sessionOnly = "Dashboard session only (cookie `__Host-timewheel-session`); an API key in the key header or as Bearer is 401."

const common = {
  400: errorResponse("`Timewheel-Project` missing or unknown, or a bad value."),
  401: errorResponse("No live session, or an API key was sent."),
  403: errorResponse("A change from another origin.")
}

const keyView = {
  type: "object",
  required: ["id", "hint", "label", "createdAt", "lastUsedAt", "revokedAt"],
  properties: {
    id: { type: "string", format: "uuid" },
    hint: { type: "string", description: "Prefix and last 4 characters." },
    label: { type: ["string", "null"], description: "What the key is for, as given at creation (null: none)." },
    createdAt: { type: "string", format: "date-time" },
    lastUsedAt: { type: ["string", "null"], format: "date-time", description: "Written at most once a minute per node." },
    revokedAt: { type: ["string", "null"], format: "date-time" }
  }
}

const alertsView = {
  type: "object",
  properties: {
    webhookUrl: { type: ["string", "null"], description: "Slack-compatible incoming webhook: receives POST `{\"text\": …}`." },
    emailRecipients: { type: "array", items: { type: "string" } },
    emailConfigured: { type: "boolean", description: "Whether the service has an SMTP_URL." },
    recent: { type: "array", items: { type: "object" } }
  }
}

export const dashboardPaths = (): Paths => ({
  "/session": {
    post: {
      operationId: "signIn",
      security: PUBLIC,
      summary: "Sign in to the dashboard",
      description: "Sets the session cookie (HttpOnly, Secure, SameSite=Strict). 5 failures of an account, or 20 from an address, within 15 minutes: 429 until the oldest is 15 minutes old.",
      parameters: [originHeader],
      requestBody: { required: true, content: { "application/json": { schema: { type: "object", required: ["email", "password"], properties: { email: { type: "string" }, password: { type: "string" } } } } } },
      responses: {
        200: jsonResponseOf("Signed in.", { type: "object", properties: { email: { type: "string" }, expiresAt: { type: "string", format: "date-time" } } }),
        400: errorResponse("email or password missing."),
        401: errorResponse("`Wrong e-mail or password`."),
        403: common[403],
        429: errorResponse("Too many failed sign-ins (with Retry-After).")
      }
    },
    get: { operationId: "whoAmI", security: SESSION_ONLY, summary: "The signed-in administrator", description: sessionOnly, responses: { 200: jsonResponseOf("The session's admin.", { type: "object" }), 401: common[401] } },
    delete: { operationId: "signOut", security: SESSION_ONLY, summary: "Sign out (everywhere)", parameters: [originHeader], responses: { 204: emptyResponse("Signed out; the cookie is cleared."), 403: common[403] } }
  },
  "/projects": {
    get: { operationId: "listProjects", security: SESSION_ONLY, summary: "Every project (id, name)", description: sessionOnly, responses: { 200: jsonResponseOf("The projects.", { type: "object" }), 401: common[401] } }
  },
  "/keys": {
    get: { operationId: "listKeys", security: SESSION_ONLY, summary: "The project's API keys", description: sessionOnly, parameters: [projectHeader], responses: { 200: jsonResponseOf("`{keys: [...]}`, oldest first.", { type: "object", properties: { keys: { type: "array", items: keyView } } }), ...common } },
    post: { operationId: "createKey", security: SESSION_ONLY, summary: "Create an API key", description: `${sessionOnly} The clear key is in this answer only.`, parameters: [projectHeader, originHeader], requestBody: { required: false, content: { "application/json": { schema: { type: "object", properties: { label: { type: ["string", "null"], maxLength: 100, description: "What the key is for (trimmed; blank: none); no control characters." } } } } } }, responses: { 201: jsonResponseOf("The key's view and `key`.", { ...keyView, properties: { ...keyView.properties, key: { type: "string" } } }), ...common, 400: errorResponse("`Timewheel-Project` missing or unknown, a bad label (`label must be at most 100 characters`, …), or a body that is not a JSON object.") } }
  },
  "/keys/{id}": {
    delete: { operationId: "revokeKey", security: SESSION_ONLY, summary: "Revoke an API key (every node at once)", description: sessionOnly, parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }, projectHeader, originHeader], responses: { 204: emptyResponse("Revoked."), 404: errorResponse("`Key not found`."), ...common } }
  },
  "/alerts": {
    get: { operationId: "getAlerts", security: SESSION_ONLY, summary: "The project's failure alerts", description: sessionOnly, parameters: [projectHeader], responses: { 200: jsonResponseOf("Settings and latest messages.", alertsView), ...common } },
    put: { operationId: "putAlerts", security: SESSION_ONLY, summary: "Replace the project's alert targets", description: sessionOnly, parameters: [projectHeader, originHeader], requestBody: { required: true, content: { "application/json": { schema: { type: "object", properties: { webhookUrl: { type: ["string", "null"] }, emailRecipients: { type: "array", items: { type: "string" } } } } } } }, responses: { 200: jsonResponseOf("Settings after.", alertsView), ...common } }
  },
  "/alerts/test": {
    post: { operationId: "testAlert", security: SESSION_ONLY, summary: "Send a test alert to every target now", description: sessionOnly, parameters: [projectHeader, originHeader], responses: { 200: jsonResponseOf("`{results: [{channel, error}]}`.", { type: "object" }), ...common } }
  },
  "/overview": {
    get: { operationId: "overview", security: SESSION_ONLY, summary: "The project's overview series (from the rollup)", description: sessionOnly, parameters: [projectHeader, { name: "hours", in: "query", required: false, schema: { type: "integer", enum: [1, 6, 24], default: 24 } }], responses: { 200: jsonResponseOf("Columns per minute, totals, tag policies.", { type: "object" }), ...common } }
  },
  "/dead-letters": {
    get: {
      operationId: "listDeadLetters",
      security: SESSION_ONLY,
      summary: "The triggers that end in a dead letter now",
      description: `${sessionOnly} Triggers whose latest attempt is a dead letter (the set of \`GET /jobs?deadLetter=true\`), newest dead letter first, each with that attempt; \`count\` is how many there are in all.`,
      parameters: [
        projectHeader,
        { name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 500, default: 50 } },
        { name: "cursor", in: "query", required: false, schema: { type: "string" } }
      ],
      responses: { 200: jsonResponseOf("`{count, triggers: [...], nextCursor}`.", { type: "object" }), ...common }
    }
  },
  "/jobs/{id}/cancel": {
    post: { operationId: "cancelFromDashboard", security: SESSION_ONLY, summary: "Cancel a trigger (the dashboard's button)", description: `${sessionOnly} The DELETE /cancel command by id, with its answers.`, parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }, projectHeader, originHeader], responses: { 204: emptyResponse("Cancelled."), 404: errorResponse("`Job not found`."), 410: errorResponse("`Job is no longer cancellable (status=…)`, `Generator already cancelled`."), ...common } }
  }
})
