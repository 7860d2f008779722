// OpenAPI fragment of the bulk actions (actions.ts) and of the trigger filter they share with
// GET /jobs (openapi/logs.ts takes the filter's query parameters from here): the request body, the
// action view of docs/bulk-actions.md "The action", and every response the handlers give in their check order.
import { ACTION_STATUSES, BULK_ACTIONS, EMPTY_CANCEL_FILTER } from "../../domain/bulkAction.ts"
import { JOB_OUTCOMES, TRIGGER_KINDS, TRIGGER_STATUSES } from "../../domain/trigger.ts"
import { errorResponse, jsonResponseOf, KEY_BEARER_OR_SESSION, type Paths, unauthorized } from "./parts.ts"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../requestParts.ts"

/** The filter's fields: their schema (a JSON filter's; in a query a boolean is `true` or `false`) and meaning. */
const FILTER_FIELDS = {
  status: { schema: { type: "string", enum: TRIGGER_STATUSES }, description: "Only triggers in this status." },
  outcome: { schema: { type: "string", enum: JOB_OUTCOMES }, description: "Only triggers that ended so (see the trigger view's `outcome`)." },
  kind: { schema: { type: "string", enum: TRIGGER_KINDS }, description: "`job` (one-shots and generator instances) or `generator`." },
  tag: { schema: { type: "string" }, description: "Only triggers carrying this tag." },
  customKey: { schema: { type: "string" }, description: "Only triggers with this custom key." },
  deadLetter: {
    schema: { type: "boolean" },
    description: "`true`: only triggers whose latest execution is a dead letter; `false`: only the others (also those never attempted)."
  },
  scheduledFrom: {
    schema: { type: "string", format: "date-time" },
    description: "ISO 8601 (no offset: UTC): only triggers scheduled at or after it. A generator's time is its upcoming instance's; " +
      "a generator without one is left out by a time range."
  },
  scheduledTo: { schema: { type: "string", format: "date-time" }, description: "ISO 8601: only triggers scheduled before it (half-open)." }
}

/** The filter as query parameters (GET /jobs). */
export const filterParameters = Object.entries(FILTER_FIELDS).map(([name, field]) => ({
  name, in: "query", required: false, description: field.description, schema: field.schema
}))

const filterSchema = {
  type: "object",
  additionalProperties: false,
  properties: Object.fromEntries(Object.entries(FILTER_FIELDS).map(([name, field]) => [name, { ...field.schema, description: field.description }])),
  description: "Which of the project's triggers: every field given must hold (GET /jobs takes the same fields). " +
    `A cancel needs at least one (\`${EMPTY_CANCEL_FILTER}\`); a replay's empty filter is every dead letter of the project.`
}

const isoTime = { type: "string", format: "date-time", description: "ISO 8601, UTC, milliseconds." }

const count = (description: string) => ({ type: "integer", minimum: 0, description })

const actionSchema = {
  type: "object",
  required: ["id", "action", "filter", "status", "matched", "processed", "untouched", "createdAt", "finishedAt"],
  properties: {
    id: { type: "string", format: "uuid" },
    action: { type: "string", enum: BULK_ACTIONS },
    filter: { ...filterSchema, description: "The filter as given (times as ISO, UTC, milliseconds)." },
    status: { type: "string", enum: ACTION_STATUSES, description: "`failed`: given up after its chunks kept failing." },
    matched: count("Triggers in the set, fixed when the action started."),
    processed: count("Triggers of the set looked at so far."),
    cancelled: count("cancel: triggers cancelled (a generator's upcoming instance is not counted)."),
    replayed: count("replay: triggers queued for a new attempt."),
    untouched: {
      type: "object",
      additionalProperties: { type: "integer" },
      description: "Triggers left alone, by reason: their status (not cancellable, or not completed), `notDeadLetter` (a replay: " +
        "its latest execution is not a dead letter), `deleted` (gone since the action started)."
    },
    createdAt: isoTime,
    finishedAt: { ...isoTime, type: ["string", "null"], description: "null while running." }
  }
}

const startBody = {
  type: "object",
  required: ["action", "filter"],
  additionalProperties: false,
  properties: {
    action: { type: "string", enum: BULK_ACTIONS },
    filter: filterSchema,
    dryRun: { type: "boolean", description: "`true`: answer `{matched}` only; nothing changes." },
    replay: {
      type: "object",
      additionalProperties: false,
      description: "replay only: what the replayed attempts send instead; the triggers themselves are not changed.",
      properties: {
        url: { type: "string", description: "An absolute http(s) URL instead of each trigger's own." },
        headers: {
          type: "object",
          additionalProperties: { type: "string" },
          description: "Headers added to the attempt, each replacing a stored header of the same name (`content-type` replaces the " +
            "body's type). Not allowed: Host, Content-Length, hop-by-hop headers, the prefix's."
        }
      }
    }
  }
}

const pathId = { name: "id", in: "path", required: true, description: "The action's id.", schema: { type: "string" } }

export const actionPaths = (): Paths => ({
  "/actions": {
    post: {
      operationId: "startAction",
      summary: "Cancel or replay every trigger matching a filter",
      description: "The set is the project's triggers matching the filter now; the action runs in chunks on any node and acts on " +
        "each trigger at most once, under the rules of `DELETE /cancel` or of a replay (`POST /jobs/{id}/executions`), dead letters " +
        "only. The same action on the same filter while one runs answers that one (202). No quota.",
      security: KEY_BEARER_OR_SESSION,
      requestBody: { required: true, content: { "application/json": { schema: startBody } } },
      responses: {
        200: jsonResponseOf("A dry run: the size of the set.", {
          type: "object", required: ["matched"], properties: { matched: count("Triggers matching now.") }
        }),
        202: jsonResponseOf("The action, running (or completed at once when nothing matched).", actionSchema),
        400: errorResponse("Invalid JSON (empty body), or a field's message: `Unknown field: <name>`, `action must be \"cancel\" or " +
          "\"replay\"`, `filter must be a JSON object`, `Unknown filter field: <name>`, a filter value's (`status must be one of …`, " +
          `\`Invalid date: <date>\`), \`dryRun must be true or false\`, \`replay is only for action "replay"\`, \`Invalid URL: <url>\`, ` +
          `\`replay.headers cannot set <name>\`, \`${EMPTY_CANCEL_FILTER}\`.`),
        401: unauthorized,
        413: errorResponse("A body over 64 KiB."),
        415: {
          description: "A Content-Type other than application/json (plain text `Unsupported content-type: <type>`).",
          content: { "text/plain": { schema: { type: "string" } } }
        }
      }
    },
    get: {
      operationId: "listActions",
      summary: "The project's bulk actions, newest first",
      security: KEY_BEARER_OR_SESSION,
      parameters: [
        { name: "limit", in: "query", required: false, description: `Page size, 1 to ${MAX_PAGE_SIZE}.`, schema: { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE } },
        { name: "cursor", in: "query", required: false, description: "`nextCursor` of the previous page.", schema: { type: "string" } }
      ],
      responses: {
        200: jsonResponseOf("A page of actions.", {
          type: "object",
          required: ["actions", "nextCursor"],
          properties: { actions: { type: "array", items: actionSchema }, nextCursor: { type: ["string", "null"] } }
        }),
        400: errorResponse("A query value is invalid (the message names it)."),
        401: unauthorized
      }
    }
  },
  "/actions/{id}": {
    get: {
      operationId: "getAction",
      summary: "A bulk action and its progress",
      security: KEY_BEARER_OR_SESSION,
      parameters: [pathId],
      responses: {
        200: jsonResponseOf("The action.", actionSchema),
        401: unauthorized,
        404: errorResponse("`Action not found`: unknown id, or an action of another project.")
      }
    }
  }
})
