// The target policy endpoints and GET /targets (docs/protecting-targets.md): the HTTP reading of
// commands/targetPolicies.ts, in the style of /tag-policies. Exact paths; on POST and PUT the
// Content-Type (415) and the body's JSON and shape (empty 400) come before the credentials (key
// header, Bearer or dashboard session: 401); the command then answers 404, the validation messages
// and 409. GET → 200 array, POST → 201, PUT → 200 (the policy), DELETE → 204 without a body.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import {
  createTargetPolicy, decodeTargetPolicyRequest, deleteTargetPolicy, listTargetPolicies, listTargets, updateTargetPolicy
} from "../commands/targetPolicies.ts"
import { authenticate } from "./auth.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { readJsonBody, requireExactPath } from "./requestParts.ts"

const POLICIES = /^\/target-policies$/
const POLICY = /^\/target-policies\/[^/]+$/
const TARGETS = /^\/targets$/

const pathId = Effect.map(HttpRouter.params, (params) => params["id"] ?? "")

const listRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICIES)
  const { projectId } = yield* authenticate(request)
  return jsonResponse(200, yield* listTargetPolicies(projectId))
})

const createRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICIES)
  const body = yield* decodeTargetPolicyRequest(yield* readJsonBody(request), "create")
  const { projectId } = yield* authenticate(request)
  return jsonResponse(201, yield* createTargetPolicy(projectId, body))
})

const updateRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICY)
  const patch = yield* decodeTargetPolicyRequest(yield* readJsonBody(request), "update")
  const { projectId } = yield* authenticate(request)
  return jsonResponse(200, yield* updateTargetPolicy(projectId, yield* pathId, patch))
})

const deleteRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICY)
  const { projectId } = yield* authenticate(request)
  yield* deleteTargetPolicy(projectId, yield* pathId)
  return HttpServerResponse.empty({ status: 204 })
})

const targetsRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, TARGETS)
  const { projectId } = yield* authenticate(request)
  return jsonResponse(200, yield* listTargets(projectId))
})

export const TargetPolicyRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/target-policies", handle(listRoute))
  yield* router.add("POST", "/target-policies", handle(createRoute))
  yield* router.add("PUT", "/target-policies/:id", handle(updateRoute))
  yield* router.add("DELETE", "/target-policies/:id", handle(deleteRoute))
  yield* router.add("GET", "/targets", handle(targetsRoute))
}))
