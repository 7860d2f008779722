// OpenAPI fragment of the tag policy endpoints (tagPolicies.ts): the policy view of docs/tag-policies.md
// "Endpoints" (request fields, unset ones null, id, timestamps, live counts) as a schema, the request
// body, and every response the handlers give, in the check order of its "Errors".
import { RETRY_ONS, RETRY_STRATEGIES } from "../../domain/retry.ts"
import { MAX_THROUGHPUT_WINDOWS } from "../../domain/gates/throughput.ts"
import { errorResponse, jsonResponseOf, KEY_BEARER_OR_SESSION, type Paths, unauthorized } from "./parts.ts"

const nullableInteger = (description: string, range: { readonly minimum?: number; readonly maximum?: number } = {}) => ({
  type: ["integer", "null"], ...range, description
})

/** The request fields, as a body takes them and the view shows them. */
const fieldProperties = {
  tag: { type: "string", pattern: "^[a-z0-9_-]{1,50}$", description: "The tag whose triggers the policy governs; one policy per tag." },
  maxConcurrent: nullableInteger("Requests of the tag in flight at once, across the cluster.", { minimum: 1 }),
  requestTimeoutSeconds: nullableInteger(
    "Bounds a delivery's whole exchange; the shortest across a trigger's tags wins (default 300).",
    { minimum: 1, maximum: 3600 }
  ),
  throughput: {
    type: ["object", "null"],
    maxProperties: MAX_THROUGHPUT_WINDOWS,
    propertyNames: { pattern: "^[1-9][0-9]*[smhd]$" },
    additionalProperties: { type: "number", minimum: 0 },
    description: "Window (`<n>s`, `m`, `h` or `d`) → starts allowed within any sliding window of that length, cluster-wide. " +
      "A rate below 1 stretches the window by 1/rate (`{\"1m\": 0.5}`: one per two minutes); `0` pauses the tag. " +
      "The effective window may not exceed 30 days. `{}` is read as null."
  },
  retryStrategy: {
    type: ["string", "null"],
    enum: [...RETRY_STRATEGIES, null],
    description: "The tag's retry opinion; `none` or null expresses none (docs/retries.md)."
  },
  retryMaxAttempts: nullableInteger("Counts the first attempt; null: unlimited. 3 when a create leaves it out.", { minimum: 1 }),
  retryInitialDelaySeconds: nullableInteger("Required with `fixed` and `exponential`.", { minimum: 0, maximum: 86400 }),
  retryMaxDelaySeconds: nullableInteger("Caps an exponential delay; null: no cap.", { minimum: 0, maximum: 86400 }),
  retryOn: {
    type: ["string", "null"],
    enum: [...RETRY_ONS, null],
    description: "Which failures are retried; null: `5xx_and_network`."
  }
}

const isoTime = { type: "string", format: "date-time", description: "ISO 8601, UTC, milliseconds." }

const policySchema = {
  type: "object",
  required: ["id", ...Object.keys(fieldProperties), "createdAt", "updatedAt", "queued", "inFlight", "heldUntil"],
  properties: {
    id: { type: "string", format: "uuid" },
    ...fieldProperties,
    createdAt: isoTime,
    updatedAt: isoTime,
    queued: { type: "integer", minimum: 0, description: "The project's triggers with this tag held back by its gates now (status `queued`)." },
    inFlight: { type: "integer", minimum: 0, description: "The project's triggers with this tag admitted by its gates and being sent now (for a policy with maxConcurrent or throughput)." },
    heldUntil: {
      type: ["string", "null"],
      format: "date-time",
      description: "When the tag's hold ends: after a 429 or 503 of its target, no trigger with the tag starts until then " +
        "(the Retry-After time, at most an hour; without one a backoff of 1 s doubling up to 60 s). null when not held."
    }
  }
}

const createBody = {
  type: "object",
  required: ["tag"],
  properties: fieldProperties,
  description: "At least one of throughput, maxConcurrent, requestTimeoutSeconds or retryStrategy. Null or absent: unset. Unknown fields are ignored."
}

const updateBody = {
  type: "object",
  properties: fieldProperties,
  description: "A patch: a present field replaces (null clears; retryMaxAttempts null: unlimited), an absent one keeps its value. " +
    "The policy as it would be after the update is validated."
}

const idParameter = { name: "id", in: "path", required: true, description: "The policy's id.", schema: { type: "string" } }

const badRequest = {
  description: "Invalid JSON or a wrong shape (`tag` missing on POST, a wrong field type, an unknown retryStrategy or retryOn, " +
    "a malformed throughput window): empty body. A value out of range: `BadRequest` with the validation message docs/tag-policies.md lists.",
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
}
const unsupportedContentType = {
  description: "A Content-Type other than application/json (plain text `Unsupported content-type: <type>`).",
  content: { "text/plain": { schema: { type: "string" } } }
}
const notFound = errorResponse("`Tag policy not found`: unknown id, or a policy of another project.")
const conflict = errorResponse("`A tag policy for tag \"<tag>\" already exists (id <id>)`: the tag has a policy already.")

export const tagPolicyPaths = (): Paths => ({
  "/tag-policies": {
    get: {
      operationId: "listTagPolicies",
      summary: "List the project's tag policies, oldest first, with live counts",
      security: KEY_BEARER_OR_SESSION,
      responses: { 200: jsonResponseOf("The policies.", { type: "array", items: policySchema }), 401: unauthorized }
    },
    post: {
      operationId: "createTagPolicy",
      summary: "Create a tag policy",
      security: KEY_BEARER_OR_SESSION,
      requestBody: { required: true, content: { "application/json": { schema: createBody } } },
      responses: {
        201: jsonResponseOf("The policy created.", policySchema),
        400: badRequest,
        401: unauthorized,
        409: conflict,
        415: unsupportedContentType
      }
    }
  },
  "/tag-policies/{id}": {
    put: {
      operationId: "updateTagPolicy",
      summary: "Update a tag policy (patch)",
      description: "Changing `retryStrategy` alone fails when the stored policy has no initial delay. A new `tag` must be free.",
      security: KEY_BEARER_OR_SESSION,
      parameters: [idParameter],
      requestBody: { required: true, content: { "application/json": { schema: updateBody } } },
      responses: {
        200: jsonResponseOf("The policy after the update.", policySchema),
        400: badRequest,
        401: unauthorized,
        404: notFound,
        409: conflict,
        415: unsupportedContentType
      }
    },
    delete: {
      operationId: "deleteTagPolicy",
      summary: "Delete a tag policy",
      description: "The tag's held-back triggers are released at once.",
      security: KEY_BEARER_OR_SESSION,
      parameters: [idParameter],
      responses: { 204: { description: "Deleted (no body)." }, 401: unauthorized, 404: notFound }
    }
  }
})
