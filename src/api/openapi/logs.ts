// OpenAPI fragment of the log and replay endpoints (logs.ts): the trigger and execution views of
// docs/reading.md as schemas, the query parameters, and every error response the handlers give.
import { EXECUTION_STATUSES } from "../../commands/logs.ts"
import { JOB_OUTCOMES, TRIGGER_KINDS, TRIGGER_STATUSES } from "../../domain/trigger.ts"
import { LIST_PAGE_MAX_BYTES } from "../../domain/listPage.ts"
import { ENCODING_PROBE_BYTES, LIST_BODY_MAX_BYTES } from "../../domain/views.ts"
import { filterParameters } from "./actions.ts"
import { errorResponse, jsonResponseOf, KEY_BEARER_OR_SESSION, type Paths, unauthorized } from "./parts.ts"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../requestParts.ts"

const isoTime = { type: "string", format: "date-time", description: "ISO 8601, UTC, milliseconds." }
const nullable = (type: string) => ({ type: [type, "null"] })

const triggerSchema = {
  type: "object",
  required: [
    "id", "kind", "status", "outcome", "scheduledAt", "url", "method", "headers", "body", "contentType", "title", "tags",
    "customKey", "retry", "generatorId", "attempts", "createdAt", "updatedAt"
  ],
  properties: {
    id: { type: "string", format: "uuid" },
    kind: { type: "string", enum: TRIGGER_KINDS },
    status: {
      type: "string",
      enum: TRIGGER_STATUSES,
      description: "One-shots and instances: registered … cancelled. Generators: active or cancelled."
    },
    outcome: {
      type: ["string", "null"],
      enum: [...JOB_OUTCOMES, null],
      description: "How it ended: `delivered` or `dead_letter` (a completed trigger, by its latest attempt), `cancelled`, `skipped`; null while pending."
    },
    scheduledAt: {
      type: ["string", "null"],
      format: "date-time",
      description: "For a generator, the time of its upcoming instance (null when it has none)."
    },
    url: { type: "string" },
    method: { type: "string" },
    headers: {
      type: "object",
      additionalProperties: { type: "string" },
      description: "A header stored several times has its values joined with \", \"."
    },
    body: {
      type: ["object", "null"],
      required: ["encoding", "value", "size"],
      properties: {
        encoding: { type: "string", enum: ["text", "base64"] },
        value: { type: ["string", "null"], description: "The whole body; null when a list leaves it out (`truncated`)." },
        size: { type: "integer", description: "Bytes stored." },
        truncated: {
          type: "boolean",
          enum: [true],
          description: `Only in \`GET /jobs\`, only for a body whose value would take over ${LIST_BODY_MAX_BYTES} bytes in the JSON ` +
            "(escaped text, or base64): listed without its value (`GET /jobs/{id}` returns it whole)."
        }
      },
      description: "`text` when the stored bytes are valid UTF-8, else `base64` (for a body left out of a list: as its first " +
        `${ENCODING_PROBE_BYTES} bytes suggest).`
    },
    contentType: nullable("string"),
    title: nullable("string"),
    tags: { type: "array", items: { type: "string" } },
    customKey: nullable("string"),
    retry: {
      type: ["object", "null"],
      description: "The per-trigger retry policy, or null.",
      properties: {
        strategy: { type: "string", enum: ["none", "fixed", "exponential"] },
        maxAttempts: nullable("integer"),
        initialDelaySeconds: { type: "integer" },
        maxDelaySeconds: nullable("integer"),
        jitter: { type: "boolean" },
        retryOn: { type: "string", enum: ["network_only", "5xx_and_network", "non_2xx"] }
      }
    },
    generatorId: { type: ["string", "null"], description: "Set on generator instances." },
    attempts: { type: "integer", description: "Attempts made so far." },
    createdAt: isoTime,
    updatedAt: isoTime
  }
}

const executionSchema = {
  type: "object",
  required: [
    "id", "jobId", "attempt", "status", "startedAt", "finishedAt", "durationMs", "httpStatus", "responseHeaders",
    "responseBody", "isDeadLetter", "connectTimeoutSeconds", "timeoutSeconds", "triggeredBy", "url"
  ],
  properties: {
    id: { type: "string", format: "uuid" },
    jobId: { type: "string", format: "uuid" },
    attempt: { type: "integer", minimum: 1 },
    status: { type: "string", enum: EXECUTION_STATUSES, description: "`succeeded` when a 2xx response arrived." },
    startedAt: isoTime,
    finishedAt: isoTime,
    durationMs: { type: "integer" },
    httpStatus: nullable("integer"),
    responseHeaders: { type: ["object", "null"], additionalProperties: { type: "string" } },
    responseBody: {
      type: ["string", "null"],
      description: `UTF-8, the first 64 KiB received; in a list, its first part that takes at most ${LIST_BODY_MAX_BYTES} bytes in the JSON.`
    },
    errorKind: {
      type: ["string", "null"],
      description: "Present when no HTTP response was received (always present, maybe null, with deadLetterOnly=true)."
    },
    errorCode: { type: ["string", "null"], description: "Underlying code (resolver, socket, certificate)." },
    errorMessage: { type: "string", description: "Present on a failed attempt that has one." },
    isDeadLetter: { type: "boolean" },
    connectTimeoutSeconds: { type: "integer" },
    timeoutSeconds: { type: "integer" },
    triggeredBy: { type: ["string", "null"], description: "`retry` on a replayed attempt." },
    url: { type: "string", description: "The job URL the attempt went to." }
  }
}

const query = (name: string, description: string, schema: unknown) => ({ name, in: "query", required: false, description, schema })
const pathId = (description: string) => ({ name: "id", in: "path", required: true, description, schema: { type: "string" } })

const pageParameters = [
  query("limit", `Page size, 1 to ${MAX_PAGE_SIZE}.`, { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE }),
  query("cursor", "`nextCursor` of the previous page.", { type: "string" })
]

const badQuery = errorResponse("A query value is invalid (the message names it).")

/** A list's 200: the page, and a warning naming the query parameters it ignored. */
const listed = (description: string, schema: unknown) => ({
  ...jsonResponseOf(description, schema),
  headers: {
    "Timewheel-Warning": {
      description: "Only when the query has parameters this list does not take (the answer is as without them): their names, each with the one it likely meant.",
      schema: { type: "string" }
    }
  }
})
const jobNotFound = errorResponse("`Job not found`: unknown id, or a trigger of another project.")
const page = (name: string, item: unknown) => ({
  type: "object",
  required: [name, "nextCursor"],
  description: `At most \`limit\` entries, ending early (with a \`nextCursor\`) before the entry that would take the entries past ` +
    `${LIST_PAGE_MAX_BYTES} bytes of JSON; the first entry is always listed.`,
  properties: { [name]: { type: "array", items: item }, nextCursor: { type: ["string", "null"], description: "null on the last page." } }
})

export const logPaths = (): Paths => ({
  "/jobs": {
    get: {
      operationId: "listJobs",
      summary: "List triggers, newest first",
      description: "The filters are those of `POST /actions`: a set listed here is the set a bulk action acts on.",
      security: KEY_BEARER_OR_SESSION,
      parameters: [
        ...filterParameters,
        ...pageParameters
      ],
      responses: { 200: listed("A page of triggers.", page("jobs", triggerSchema)), 400: badQuery, 401: unauthorized }
    }
  },
  "/jobs/{id}": {
    get: {
      operationId: "getJob",
      summary: "Get one trigger or generator",
      security: KEY_BEARER_OR_SESSION,
      parameters: [pathId("Trigger or generator id.")],
      responses: { 200: jsonResponseOf("The trigger.", triggerSchema), 401: unauthorized, 404: jobNotFound }
    }
  },
  "/jobs/{id}/executions": {
    get: {
      operationId: "listJobExecutions",
      summary: "Every attempt of one trigger, oldest first",
      security: KEY_BEARER_OR_SESSION,
      parameters: [pathId("Trigger id.")],
      responses: {
        200: jsonResponseOf("The attempts, all of them (no pages), written as they are read: a failure while reading ends the answer early.", {
          type: "object", required: ["executions"], properties: { executions: { type: "array", items: executionSchema } }
        }),
        401: unauthorized,
        404: jobNotFound
      }
    },
    post: {
      operationId: "replayJob",
      summary: "Replay a completed trigger",
      description: "Queues a fresh attempt with the trigger's stored method, headers and body, recorded with `triggeredBy: \"retry\"`.",
      security: KEY_BEARER_OR_SESSION,
      parameters: [pathId("Trigger id.")],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: { type: "object", required: ["triggeredBy"], properties: { triggeredBy: { type: "string", enum: ["retry"] } } }
          }
        }
      },
      responses: {
        202: jsonResponseOf("Queued.", {
          type: "object",
          required: ["jobId", "status"],
          properties: { jobId: { type: "string", format: "uuid" }, status: { type: "string", enum: ["queued"] } }
        }),
        400: {
          description: "Invalid JSON (empty body), or `triggeredBy must be \"retry\"` / `Body must be a JSON object`.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
        },
        401: unauthorized,
        404: jobNotFound,
        410: errorResponse("`Job is not completed (status=<status>)`."),
        415: {
          description: "A Content-Type other than application/json (plain text `Unsupported content-type: <type>`).",
          content: { "text/plain": { schema: { type: "string" } } }
        }
      }
    }
  },
  "/executions": {
    get: {
      operationId: "listExecutions",
      summary: "List attempts across triggers, newest first",
      security: KEY_BEARER_OR_SESSION,
      parameters: [
        query("jobId", "Only attempts of this trigger.", { type: "string", format: "uuid" }),
        query("customKey", "Only attempts of triggers with this custom key (a generator's key covers its instances).", { type: "string" }),
        query("executionStatus", "`succeeded` or `failed`.", { type: "string", enum: EXECUTION_STATUSES }),
        query("httpStatus", "Only attempts that got this HTTP status.", { type: "integer", minimum: 100, maximum: 599 }),
        query("deadLetterOnly", "`true`: only dead letters.", { type: "boolean" }),
        ...pageParameters
      ],
      responses: { 200: listed("A page of attempts.", page("executions", executionSchema)), 400: badQuery, 401: unauthorized }
    }
  },
  "/executions/{id}": {
    get: {
      operationId: "getExecution",
      summary: "Get one attempt",
      security: KEY_BEARER_OR_SESSION,
      parameters: [pathId("Execution id.")],
      responses: {
        200: jsonResponseOf("The attempt.", executionSchema),
        401: unauthorized,
        404: errorResponse("`Execution not found`.")
      }
    }
  }
})
