// GET /docs: an interactive browser (Scalar) of the OpenAPI document for client generators (the
// credentials as security schemes, so its "Authorize" works; openapi.ts), its server the address
// the browser used (`https://` and the Host header), so "Try it" calls this very service.
// The Scalar bundle ships inside the `effect` package; it is inlined so the page needs no CDN.
// Credentials (docs/README.md "Other public paths"): a key (header or Bearer) or a signed-in
// dashboard session, which needs no project here (the reference belongs to none). A browser without
// either (it asks for HTML) is sent to the dashboard's sign-in, which comes back here; an API client
// gets the 401.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { authenticateAnyProject } from "./auth.ts"
import { handle } from "./handle.ts"
import type { Paths } from "./openapi/parts.ts"

const loadScalarBundle = Effect.promise(async () => {
  const effectMain = createRequire(import.meta.url).resolve("effect")
  const file = path.join(path.dirname(effectMain), "http-api", "internal", "httpApiScalar.js")
  const module = (await import(pathToFileURL(file).href)) as { readonly javascript: string }
  return module.javascript
})

const escapeJson = (value: unknown) =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

export const docsPage = (document: { readonly info: { readonly title: string } }, scalar: string) => `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>${document.info.title.replace(/</g, "&lt;")}</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <!-- no icon: without this line the browser asks for /favicon.ico, a 404 -->
    <link rel="icon" href="data:," />
  </head>
  <body>
    <div id="api-reference-container"></div>
    <script>${scalar}</script>
    <script>
      window.Scalar.createApiReference(document.getElementById("api-reference-container"), {
        _integration: "html", withDefaultFonts: false, content: ${escapeJson(document)}
      })
    </script>
  </body>
</html>`

/** The dashboard's sign-in, coming back to the reference. */
export const SIGN_IN = `/dashboard/sign-in?next=${encodeURIComponent("/docs")}`

/** A browser's navigation: it asks for HTML first. */
const wantsHtml = (request: HttpServerRequest.HttpServerRequest) => (request.headers["accept"] ?? "").includes("text/html")

/** A Host header naming a host (and port) this page may put in its document: `https://<host>`. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/** `documentFor(server)`: the document, its server `server` (undefined: the configured one). */
export const DocsRoutes = (documentFor: (server: string | undefined) => { readonly info: { readonly title: string } }) =>
  HttpRouter.use(Effect.fn(function*(router) {
    // the 3 MB bundle is loaded on the first request, not at start (most nodes never serve /docs)
    const scalar = yield* Effect.cached(loadScalarBundle)
    yield* router.add("GET", "/docs", handle(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const allowed = yield* Effect.result(authenticateAnyProject(request))
      if (allowed._tag === "Failure") {
        if (allowed.failure._tag === "Unauthorized" && wantsHtml(request)) return HttpServerResponse.redirect(SIGN_IN, { status: 303 })
        return yield* Effect.fail(allowed.failure)
      }
      const host = request.headers["host"]
      const document = documentFor(host !== undefined && HOST.test(host) ? `https://${host}` : undefined)
      return HttpServerResponse.html(docsPage(document, yield* scalar))
    })))
  }))

export const docsPaths = (): Paths => ({})
