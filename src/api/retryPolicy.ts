// GET / PUT /project/retry-policy (docs/retries.md "The project's default policy"):
// the whole project default policy with the API's field names. PUT is a patch: omitted fields keep
// their value, a bad value is a 400 naming the field. Key header, Bearer or dashboard session.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { getProjectRetryPolicy, patchProjectRetryPolicy } from "../commands/projectRetryPolicy.ts"
import { authenticate } from "./auth.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { jsonResponseOf, KEY_BEARER_OR_SESSION, type Paths, unauthorized } from "./openapi/parts.ts"
import { readJsonBody, requireExactPath } from "./requestParts.ts"

const PATH = /^\/project\/retry-policy$/

const getPolicy = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, PATH)
  const { projectId } = yield* authenticate(request)
  return jsonResponse(200, yield* getProjectRetryPolicy(projectId))
})

/** Content-Type and JSON first (415, empty 400), then credentials, then the values. */
const putPolicy = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, PATH)
  const patch = yield* readJsonBody(request)
  const { projectId } = yield* authenticate(request)
  return jsonResponse(200, yield* patchProjectRetryPolicy(projectId, patch))
})

export const RetryPolicyRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/project/retry-policy", handle(getPolicy))
  yield* router.add("PUT", "/project/retry-policy", handle(putPolicy))
}))

const policySchema = {
  type: "object",
  required: ["retryStrategy", "retryMaxAttempts", "retryInitialDelaySeconds", "retryMaxDelaySeconds", "retryJitter", "retryOn"],
  properties: {
    retryStrategy: { type: "string", enum: ["none", "fixed", "exponential"], default: "exponential" },
    retryMaxAttempts: { type: "integer", minimum: 1, default: 3, description: "Counts the first attempt." },
    retryInitialDelaySeconds: { type: "integer", minimum: 0, maximum: 86400, default: 30 },
    retryMaxDelaySeconds: {
      type: ["integer", "null"], minimum: 0, maximum: 86400, default: null, description: "Caps an exponential delay; null: no cap."
    },
    retryJitter: { type: "boolean", default: false, description: "Multiplies each delay by 0.5 to 1.5." },
    retryOn: { type: "string", enum: ["network_only", "5xx_and_network", "non_2xx"], default: "network_only" }
  }
}

const patchSchema = { ...policySchema, required: [], description: "Any of the fields; omitted ones keep their value." }

export const retryPolicyPaths = (): Paths => ({
  "/project/retry-policy": {
    get: {
      operationId: "getProjectRetryPolicy",
      summary: "Read the project default retry policy",
      description: "Applies to triggers with no per-trigger policy whose tags express no retry opinion.",
      security: KEY_BEARER_OR_SESSION,
      responses: {
        200: jsonResponseOf("The whole policy.", policySchema),
        401: unauthorized
      }
    },
    put: {
      operationId: "patchProjectRetryPolicy",
      summary: "Patch the project default retry policy",
      description: "Takes any of the policy's fields; omitted fields keep their value. Answers the whole policy after the patch.",
      security: KEY_BEARER_OR_SESSION,
      requestBody: { required: true, content: { "application/json": { schema: patchSchema } } },
      responses: {
        200: jsonResponseOf("The whole policy after the patch.", policySchema),
        400: {
          description: "Invalid JSON (empty body), or a bad value (`BadRequest` with a message naming the field).",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
        },
        401: unauthorized,
        415: {
          description: "A Content-Type other than application/json (plain text `Unsupported content-type: <type>`).",
          content: { "text/plain": { schema: { type: "string" } } }
        }
      }
    }
  }
})
