// OpenAPI fragment of POST /declare and POST /bulk (declare.ts): the item schema of
// docs/declare-and-bulk.md "Items" (with "The body" and "Headers"), the bodies, the operations of the
// answer, and every error response of their check tables.
import { MAX_ITEMS_BODY_BYTES } from "../declare.ts"
import { errorResponse, jsonResponseOf, KEY_BEARER_OR_SESSION, type Paths, unauthorized } from "./parts.ts"

const itemSchema = {
  type: "object",
  required: ["url"],
  description: "Optional fields are omitted, never null (except `body`); unknown fields are ignored. An update replaces the whole trigger: a field left out goes back to its default.",
  properties: {
    url: { type: "string", description: "Target URL, query string included." },
    scheduledAt: {
      type: "string",
      default: "now",
      description: "As the `scheduled-at` header of /schedule: an ISO 8601 date or `now`, optionally followed by `| add <n><unit>` / `| subtract <n><unit>` (units s m h d w), or `cron(<expression>[, <zone>])` for a generator."
    },
    customKey: { type: "string", description: "Matching key. An empty key is never matched later." },
    method: { type: "string", default: "GET", description: "Upper-cased; not validated." },
    headers: {
      type: "object",
      additionalProperties: { type: "string" },
      description: "Sent as written, names lowercased; nothing is filtered. `host` replaces the Host the target sees; `content-length` is ignored; `keep-alive`, `transfer-encoding`, `upgrade` or a `connection` other than close / keep-alive make every attempt fail (`errorKind` `invalid_request`)."
    },
    body: {
      description: "Omitted or null: no body. `{\"_tag\":\"text\",\"value\":…}`: the text as UTF-8; `{\"_tag\":\"base64\",\"value\":…}`: the decoded bytes (characters outside the alphabet skipped; empty: no body). Any other JSON value: sent as compact JSON. No Content-Type is added: without one in `headers` the target gets application/octet-stream. Sent with every method, GET included."
    },
    title: { type: "string" },
    tags: { type: "array", items: { type: "string" }, default: [], description: "Not checked for format or count; the same tag twice is a 400." },
    retry: {
      type: "object",
      description: "Per-trigger retry policy; `{}` opts in with the defaults. Omitting it clears the policy.",
      properties: {
        strategy: { type: "string", enum: ["none", "fixed", "exponential"], default: "exponential" },
        maxAttempts: { type: "integer", minimum: 1, default: 3, description: "Counts the first attempt." },
        initialDelaySeconds: { type: "integer", minimum: 0, maximum: 86400, default: 30 },
        maxDelaySeconds: { type: "integer", minimum: 0, maximum: 86400, description: "Caps an exponential delay. Default none." },
        jitter: { type: "boolean", default: false },
        retryOn: { type: "string", enum: ["network_only", "5xx_and_network", "non_2xx"], default: "5xx_and_network" }
      }
    }
  }
}

const summarySchema = {
  type: "object",
  required: ["unchanged", "added", "skipped", "updated", "cancelled"],
  properties: Object.fromEntries(["unchanged", "added", "skipped", "updated", "cancelled"].map((name) => [name, { type: "integer" }]))
}

const operationSchema = {
  type: "object",
  required: ["operation", "customKey", "kind", "id"],
  properties: {
    operation: { type: "string", enum: ["added", "skipped", "unchanged", "updated", "cancelled"] },
    customKey: { type: ["string", "null"], description: "Null for keyless items and for instances of generators." },
    kind: { type: "string", enum: ["job", "generator"] },
    id: { type: "string", format: "uuid", description: "For a generator, its own id." },
    changedFields: {
      type: "array",
      items: { type: "string" },
      description: "On `updated` only: one-shot `scheduledAt url method headers body title tags retry`; generator `cronExpr tz url method headers body title tags retry`; a kind switch only `kind:job→generator` or `kind:generator→job`."
    }
  }
}

const operations = { type: "array", items: operationSchema }

const checks = (list: string, entry: string) => ({
  400: errorResponse(
    `Invalid JSON, or a body of the wrong shape (empty body); \`Duplicate customKey in ${list}: <key>\`; ` +
      `\`${entry} <key>: duplicate tag "<tag>" in tags\`; \`${entry} <key>: <error>\` for an unreadable scheduledAt ` +
      "(the /schedule date and cron messages) or a bad retry value; `<key>` is `(no customKey)` for keyless items."
  ),
  401: unauthorized,
  413: errorResponse(`A body over ${MAX_ITEMS_BODY_BYTES} bytes (\`ContentTooLarge\`).`),
  415: {
    description: "A Content-Type other than application/json (plain text `Unsupported content-type: <type>`).",
    content: { "text/plain": { schema: { type: "string" } } }
  }
})

export const declarePaths = (): Paths => ({
  "/declare": {
    post: {
      operationId: "declare",
      summary: "Make the triggers carrying one tag match a list",
      description: "Items are matched by customKey among the pending triggers carrying `tag`; unmatched pending triggers with the tag are cancelled. Every item is checked before anything is written; the call is not atomic after that (resending completes it). Never uses quota.",
      security: KEY_BEARER_OR_SESSION,
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["tag", "items"],
              properties: {
                tag: { type: "string", description: "The tag this call manages; added to every item's tags." },
                items: { type: "array", items: itemSchema, description: "The complete list; `[]` cancels every cancellable trigger with the tag." },
                runMissed: { type: "boolean", default: false, description: "Past-dated one-shot items fire right away instead of being skipped." }
              }
            }
          }
        }
      },
      responses: {
        200: jsonResponseOf("Applied.", {
          type: "object",
          required: ["tag", "summary", "operations"],
          properties: { tag: { type: "string" }, summary: summarySchema, operations }
        }),
        ...checks("items", "Item")
      }
    }
  },
  "/bulk": {
    post: {
      operationId: "bulk",
      summary: "Create, update and cancel many triggers atomically",
      description: "Cancels are applied first, then upserts matched by customKey across the project (no tag added). All or nothing. Never uses quota; cancel targets that match nothing are skipped.",
      security: KEY_BEARER_OR_SESSION,
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              properties: {
                upserts: { type: "array", items: itemSchema },
                cancels: {
                  type: "array",
                  items: {
                    oneOf: [
                      { type: "string", description: "A trigger or generator id." },
                      { type: "object", required: ["id"], properties: { id: { type: "string" } } },
                      { type: "object", required: ["customKey"], properties: { customKey: { type: "string" } } },
                      {
                        type: "object",
                        required: ["tag"],
                        properties: { tag: { type: "string" } },
                        description: "Every cancellable trigger carrying the tag, generators' queued and retrying instances included."
                      }
                    ]
                  }
                }
              }
            }
          }
        }
      },
      responses: {
        200: jsonResponseOf("Applied.", {
          type: "object",
          required: ["summary", "operations"],
          properties: { summary: summarySchema, operations }
        }),
        ...checks("upserts", "Upsert"),
        409: errorResponse("The triggers of the call kept changing while it was applied; nothing was written: resend it.")
      }
    }
  }
})
