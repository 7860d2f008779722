// OpenAPI description of /schedule (the same operation under GET, POST, PUT, PATCH and DELETE, each
// with its own operationId, as client generators need; the served document gives them one,
// openapi/specForm.ts) and DELETE /cancel. Their credentials are the key header only. The body of
// /schedule is raw bytes of any media type, described without a schema (OpenAPI 3.1's form for
// content sent as it is), so a generated client has nothing to encode.
import { emptyResponse, errorResponse, jsonResponseOf, KEY_ONLY, type Paths } from "./parts.ts"
import { MAX_BODY_BYTES } from "../scheduleRequest.ts"

const header = (name: string, description: string, required = false, schema: Record<string, unknown> = { type: "string" }) => ({
  name, in: "header", required, description, schema
})

const scheduleResult = {
  type: "object",
  required: ["triggerId", "scheduledAt", "operation", "kind", "status", "monthQuotaRemaining"],
  properties: {
    triggerId: { type: "string", format: "uuid", description: "One-shot: the trigger id. Recurring: the generator id." },
    scheduledAt: { type: "string", format: "date-time", description: "Resolved time (recurring: the next instance)." },
    operation: { type: "string", enum: ["schedule", "reschedule"] },
    kind: { type: "string", enum: ["job", "generator"] },
    status: {
      type: "string",
      enum: ["registered", "skipped", "active"],
      description: "A one-shot is `registered`, or `skipped` when its time is not in the future (it never fires; the `Timewheel-Warning` header says why); a generator is `active`."
    },
    monthQuotaRemaining: { type: "integer" }
  }
}

const scheduleBody = {
  required: false,
  description: "What the target receives, byte for byte, with the Content-Type header of this request (none: " +
    "`application/octet-stream`). Send it as it is: openapi-fetch, for one, JSON-encodes a body unless given " +
    "`bodySerializer: (body) => body` (docs/README.md, \"Typed clients\").",
  content: { "*/*": {} }
}

export const schedulePaths = (prefix: string): Paths => {
  const parameters = [
    header(`${prefix}-url`, "Absolute target URL (http or https).", true),
    header(`${prefix}-scheduled-at`, "ISO 8601 date, or `now`, optionally followed by `| add <n><unit>` / `| subtract <n><unit>` (units s m h d w); or `cron(<expression>[, <zone>])`.", true),
    header(`${prefix}-custom-key`, "Idempotency key: an existing pending trigger with this key is rescheduled."),
    header(`${prefix}-trigger-id`, "Id of the trigger or generator to edit."),
    header(`${prefix}-tags`, "Comma-separated tags: at most 10, each 1-50 characters of a-z 0-9 _ -."),
    header(`${prefix}-title`, "Label, ASCII text."),
    header(`${prefix}-run-missed`, "`true` fires a past-dated one-shot right away instead of skipping it."),
    header(`${prefix}-retry-strategy`, "Default `exponential`.", false, { type: "string", enum: ["none", "fixed", "exponential"] }),
    header(`${prefix}-retry-max-attempts`, "At least 1, counts the first attempt. Default 3.", false, { type: "integer", minimum: 1 }),
    header(`${prefix}-retry-initial-delay`, "Seconds before the first retry (every retry for `fixed`). Default 30.", false, { type: "integer", minimum: 0 }),
    header(`${prefix}-retry-max-delay`, "Seconds; cap for `exponential`. Default none.", false, { type: "integer", minimum: 0 }),
    header(`${prefix}-retry-jitter`, "Multiply each delay by 0.5-1.5. Default false.", false, { type: "boolean" }),
    header(`${prefix}-retry-on`, "Default `5xx_and_network`.", false, { type: "string", enum: ["network_only", "5xx_and_network", "non_2xx"] })
  ]
  const operation = (method: string, body: boolean) => ({
    operationId: `schedule${method}`,
    summary: `Create, or edit, a one-shot or recurring trigger (${method.toUpperCase()} is the method sent to the target)`,
    description: "Works like a proxy: the method, every header without the prefix, and the body (POST, PUT, PATCH, DELETE) are what timewheel later sends to the target URL.",
    security: KEY_ONLY,
    parameters,
    ...(body ? { requestBody: scheduleBody } : {}),
    responses: {
      200: {
        ...jsonResponseOf("Scheduled.", scheduleResult),
        headers: {
          "Timewheel-Warning": {
            description: "Only when a one-shot was stored as `skipped`: why (its time was not in the future; a date without an offset is read as UTC).",
            schema: { type: "string" }
          }
        }
      },
      400: errorResponse("A header or value is invalid (empty body when the key or URL header is missing)."),
      401: errorResponse("`Invalid api key`."),
      402: errorResponse("`Monthly quota of <limit> triggers exceeded`."),
      404: errorResponse("`Trigger not found` / `Generator not found` (edit by id)."),
      410: errorResponse("`Job is no longer in registered state` / `Generator is no longer active`."),
      ...(body ? { 413: errorResponse(`A body over ${MAX_BODY_BYTES} bytes (\`ContentTooLarge\`).`) } : {})
    }
  })
  return {
    "/schedule": {
      get: operation("Get", false),
      post: operation("Post", true),
      put: operation("Put", true),
      patch: operation("Patch", true),
      delete: operation("Delete", true)
    },
    "/cancel": {
      delete: {
        operationId: "cancel",
        summary: "Cancel one trigger or generator by id or custom key",
        security: KEY_ONLY,
        parameters: [
          header(`${prefix}-trigger-id`, "Id of a one-shot trigger, instance or generator."),
          header(`${prefix}-custom-key`, "Custom key (an active generator first, else a one-shot trigger).")
        ],
        responses: {
          204: emptyResponse("Cancelled."),
          400: errorResponse("Neither or both identifiers (empty body when the key header is missing)."),
          401: errorResponse("`Invalid api key`."),
          404: errorResponse("`Job not found`."),
          410: errorResponse("`Generator already cancelled` / `Job is no longer cancellable (status=<status>)`.")
        }
      }
    }
  }
}
