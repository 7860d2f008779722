// OpenAPI fragment of the target policy endpoints and GET /targets (targetPolicies.ts;
// docs/protecting-targets.md): the policy view and the origin view as schemas, the request bodies,
// and every response the handlers give, in their check order.
import { MAX_COOLDOWN_SECONDS } from "../../domain/targetPolicy.ts"
import { MAX_THROUGHPUT_WINDOWS } from "../../domain/gates/throughput.ts"
import { errorResponse, jsonResponseOf, KEY_BEARER_OR_SESSION, type Paths, unauthorized } from "./parts.ts"

const fieldProperties = {
  origin: {
    type: "string",
    description: "`scheme://host[:port]` of the triggers' URLs, stored lowercase without the scheme's default port " +
      "(`HTTPS://API.example.com:443` is `https://api.example.com`); or `*`: each origin of the project without a policy of its own, " +
      "separately (limits per origin, never summed). One policy per origin; not changed by PUT."
  },
  maxConcurrent: {
    type: ["integer", "null"], minimum: 1, description: "Requests to the origin in flight at once, across the cluster."
  },
  throughput: {
    type: ["object", "null"],
    maxProperties: MAX_THROUGHPUT_WINDOWS,
    propertyNames: { pattern: "^[1-9][0-9]*[smhd]$" },
    additionalProperties: { type: "number", minimum: 0 },
    description: "Window → requests to the origin allowed to start within any sliding window of that length, as a tag policy's " +
      "throughput (a rate below 1 stretches the window; `0` pauses the origin). `{}` is read as null."
  },
  circuitBreaker: {
    type: ["object", "null"],
    required: ["failures", "cooldownSeconds"],
    properties: {
      failures: { type: "integer", minimum: 1, description: "Consecutive attempts ending in a network error, a timeout or a 5xx other than 503 that open the circuit." },
      cooldownSeconds: {
        type: "integer", minimum: 1, maximum: MAX_COOLDOWN_SECONDS,
        description: "How long an open circuit holds the origin, doubled each time it opens again without a success in between (at most an hour)."
      }
    },
    description: "Stop sending while the origin is down: open, it holds the origin for the cooldown, then one attempt probes it."
  }
}

const isoTime = { type: "string", format: "date-time", description: "ISO 8601, UTC, milliseconds." }
const circuitState = { type: "string", enum: ["closed", "open", "probing"] }
const counts = {
  queued: { type: "integer", minimum: 0, description: "Triggers to the origin held back now (status `queued`); for `*`, summed over its origins." },
  inFlight: { type: "integer", minimum: 0, description: "Triggers to the origin admitted and being sent now; for `*`, summed over its origins." }
}
const heldUntil = {
  type: ["string", "null"],
  format: "date-time",
  description: "When the origin's hold ends: a 429 or 503 (the Retry-After time, at most an hour; without one a backoff of 1 s " +
    "doubling up to 60 s), or an open circuit's cooldown. null when not held, and for `*`."
}

const policySchema = {
  type: "object",
  required: ["id", ...Object.keys(fieldProperties), "createdAt", "updatedAt", "queued", "inFlight", "heldUntil", "circuit"],
  properties: {
    id: { type: "string", format: "uuid" },
    ...fieldProperties,
    createdAt: isoTime,
    updatedAt: isoTime,
    ...counts,
    heldUntil,
    circuit: { ...circuitState, type: ["string", "null"], enum: [...circuitState.enum, null], description: "The origin's circuit; null for `*`." }
  }
}

const targetSchema = {
  type: "object",
  required: ["origin", "policyId", "queued", "inFlight", "heldUntil", "circuit", "consecutiveFailures", "circuitOpenedAt", "circuitReason"],
  properties: {
    origin: { type: "string" },
    policyId: { type: "string", format: "uuid", description: "The policy covering the origin: its own, else `*`." },
    ...counts,
    heldUntil,
    circuit: { ...circuitState, description: "`closed` for a policy without a circuit breaker." },
    consecutiveFailures: { type: "integer", minimum: 0, description: "Failed attempts in a row while closed." },
    circuitOpenedAt: { type: ["string", "null"], format: "date-time", description: "When the circuit last opened; null: never." },
    circuitReason: { type: ["string", "null"], description: "The failure that last opened it (`HTTP 500`, `timeout: …`)." }
  }
}

const { origin: _origin, ...limitProperties } = fieldProperties
const createBody = {
  type: "object",
  required: ["origin"],
  properties: fieldProperties,
  description: "At least one of maxConcurrent, throughput or circuitBreaker. Null or absent: unset. Unknown fields are ignored."
}
const updateBody = {
  type: "object",
  properties: limitProperties,
  description: "A patch: a present field replaces (null clears), an absent one keeps its value; `origin` is ignored. " +
    "The policy as it would be after the update is validated (it must keep at least one of the three)."
}

const idParameter = { name: "id", in: "path", required: true, description: "The policy's id.", schema: { type: "string" } }

const badRequest = {
  description: "Invalid JSON or a wrong shape (`origin` missing on POST, a wrong field type, a malformed throughput window, a " +
    "circuitBreaker without its two integers): empty body. A value out of range: `BadRequest` with the validation message " +
    "(`Invalid origin: <value>` first).",
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
}
const unsupportedContentType = {
  description: "A Content-Type other than application/json (plain text `Unsupported content-type: <type>`).",
  content: { "text/plain": { schema: { type: "string" } } }
}
const notFound = errorResponse("`Target policy not found`: unknown id, or a policy of another project.")
const conflict = errorResponse("`A target policy for origin \"<origin>\" already exists (id <id>)`: the origin has a policy already.")

export const targetPolicyPaths = (): Paths => ({
  "/target-policies": {
    get: {
      operationId: "listTargetPolicies",
      summary: "List the project's target policies, oldest first, with live state",
      security: KEY_BEARER_OR_SESSION,
      responses: { 200: jsonResponseOf("The policies.", { type: "array", items: policySchema }), 401: unauthorized }
    },
    post: {
      operationId: "createTargetPolicy",
      summary: "Create a target policy (limits and a circuit breaker per origin)",
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
  "/target-policies/{id}": {
    put: {
      operationId: "updateTargetPolicy",
      summary: "Update a target policy (patch)",
      security: KEY_BEARER_OR_SESSION,
      parameters: [idParameter],
      requestBody: { required: true, content: { "application/json": { schema: updateBody } } },
      responses: {
        200: jsonResponseOf("The policy after the update.", policySchema),
        400: badRequest,
        401: unauthorized,
        404: notFound,
        415: unsupportedContentType
      }
    },
    delete: {
      operationId: "deleteTargetPolicy",
      summary: "Delete a target policy",
      description: "The origin's held-back triggers are released at once (to the `*` policy, when there is one).",
      security: KEY_BEARER_OR_SESSION,
      parameters: [idParameter],
      responses: { 204: { description: "Deleted (no body)." }, 401: unauthorized, 404: notFound }
    }
  },
  "/targets": {
    get: {
      operationId: "listTargets",
      summary: "The origins under a target policy that are held, queued, in flight or have a circuit not closed, alphabetically",
      security: KEY_BEARER_OR_SESSION,
      responses: { 200: jsonResponseOf("The origins.", { type: "array", items: targetSchema }), 401: unauthorized }
    }
  }
})
