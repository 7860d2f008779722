// Dashboard sign-in (docs/dashboard.md): POST /session `{"email","password"}` sets the session cookie
// (HttpOnly, Secure, SameSite=Strict) and answers the admin; GET /session answers the signed-in admin
// (401 without a live session); DELETE /session ends the session everywhere and clears the cookie
// (204). GET /projects lists every project (an administrator may act on any, docs/dashboard.md).
// POST and DELETE must come from this host's pages (`Origin`, else 403); a refused
// sign-in is 401 `Wrong e-mail or password`, or 429 while throttled (commands/sessions.ts).
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { listProjects } from "../commands/projects.ts"
import { signIn, signOut } from "../commands/sessions.ts"
import { BadRequest } from "../domain/errors.ts"
import { sessionCookie } from "../domain/auth/signin.ts"
import { authenticateSession, checkOrigin } from "./auth.ts"
import { sessionToken } from "./dashboardSessions.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { readJsonBody, requireExactPath } from "./requestParts.ts"

const SESSION = /^\/session$/

const signInRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, SESSION)
  yield* checkOrigin(request)
  const body = yield* readJsonBody(request, 64 * 1024)
  const { email, password } = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
  if (typeof email !== "string" || typeof password !== "string" || email.trim() === "" || password === "") {
    return yield* Effect.fail(new BadRequest("email and password are required"))
  }
  const signedIn = yield* signIn({ email, password, address: Option.getOrNull(request.remoteAddress) })
  return jsonResponse(200, signedIn.admin).pipe(
    HttpServerResponse.setHeader("set-cookie", sessionCookie(signedIn.token, signedIn.maxAgeSeconds)),
    HttpServerResponse.setHeader("cache-control", "no-store")
  )
})

const whoRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, SESSION)
  const { admin } = yield* authenticateSession(request, { project: false })
  return jsonResponse(200, { email: admin.email, expiresAt: admin.expiresAt }).pipe(HttpServerResponse.setHeader("cache-control", "no-store"))
})

const signOutRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, SESSION)
  yield* checkOrigin(request)
  yield* signOut(sessionToken(request))
  return HttpServerResponse.empty({ status: 204 }).pipe(HttpServerResponse.setHeader("set-cookie", sessionCookie("", 0)))
})

const projectsRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, /^\/projects$/)
  yield* authenticateSession(request, { project: false })
  return jsonResponse(200, yield* listProjects)
})

export const SessionRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("POST", "/session", handle(signInRoute))
  yield* router.add("GET", "/session", handle(whoRoute))
  yield* router.add("DELETE", "/session", handle(signOutRoute))
  yield* router.add("GET", "/projects", handle(projectsRoute))
}))
