// The tag policy endpoints (docs/tag-policies.md "Endpoints", and "Errors" for the checks in
// order): the HTTP reading of commands/tagPolicies.ts. Exact paths; on POST and
// PUT the Content-Type (415) and the body's JSON and shape (empty 400) come before the credentials
// (key header, Bearer or dashboard session: 401); the command then answers 404, the validation
// messages and 409. GET → 200 array, POST → 201, PUT → 200 (the policy), DELETE → 204 without a body.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createTagPolicy, decodeTagPolicyRequest, deleteTagPolicy, listTagPolicies, updateTagPolicy } from "../commands/tagPolicies.ts"
import { authenticate } from "./auth.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { readJsonBody, requireExactPath } from "./requestParts.ts"

const POLICIES = /^\/tag-policies$/
const POLICY = /^\/tag-policies\/[^/]+$/

/** The `id` path parameter. */
const pathId = Effect.map(HttpRouter.params, (params) => params["id"] ?? "")

const listRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICIES)
  const { projectId } = yield* authenticate(request)
  return jsonResponse(200, yield* listTagPolicies(projectId))
})

const createRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICIES)
  const body = yield* decodeTagPolicyRequest(yield* readJsonBody(request), "create")
  const { projectId } = yield* authenticate(request)
  return jsonResponse(201, yield* createTagPolicy(projectId, body))
})

const updateRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICY)
  const patch = yield* decodeTagPolicyRequest(yield* readJsonBody(request), "update")
  const { projectId } = yield* authenticate(request)
  return jsonResponse(200, yield* updateTagPolicy(projectId, yield* pathId, patch))
})

const deleteRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, POLICY)
  const { projectId } = yield* authenticate(request)
  yield* deleteTagPolicy(projectId, yield* pathId)
  return HttpServerResponse.empty({ status: 204 })
})

export const TagPolicyRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/tag-policies", handle(listRoute))
  yield* router.add("POST", "/tag-policies", handle(createRoute))
  yield* router.add("PUT", "/tag-policies/:id", handle(updateRoute))
  yield* router.add("DELETE", "/tag-policies/:id", handle(deleteRoute))
}))
