// The dashboard's pages (docs/dashboard.md), served by the service itself with every asset local: the bundle
// `npm run build` writes to dist/web/ (web/ bundled by scripts/dashboard/bundle.ts). Every
// path under /dashboard that is not an asset gets index.html, and the page's router takes it from
// there; assets have content-hashed names and are cached for good. The pages need no credentials
// (they hold no data): what they show comes from the endpoints, which need the session. A strict
// Content-Security-Policy allows only this origin's scripts and requests. `GET /` sends a browser to
// the dashboard.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as fs from "node:fs"
import * as path from "node:path"
import { handle } from "./handle.ts"

/** The nearest directory at or above `dir` holding package.json: the repository's root. */
const packageRoot = (dir: string): string =>
  fs.existsSync(path.join(dir, "package.json")) || path.dirname(dir) === dir ? dir : packageRoot(path.dirname(dir))

/**
 * dist/web of the repository (not dist/dashboard: tsc writes src/dashboard there), whether this
 * module runs from src/api, dist/api or the bundled dist/main.js.
 */
export const DASHBOARD_DIR = path.join(packageRoot(import.meta.dirname), "dist", "web")

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".map": "application/json"
}

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

const notBuilt = HttpServerResponse.text(
  "The dashboard is not built: run `npm run build` (npm start does it), which bundles web/ into dist/web/.\n",
  { status: 503 }
)

/** Files read once (the bundle does not change while the service runs). */
const cache = new Map<string, Uint8Array | null>()
const readAsset = (file: string): Uint8Array | null => {
  if (!cache.has(file)) {
    try {
      cache.set(file, fs.readFileSync(path.join(DASHBOARD_DIR, file)))
    } catch {
      cache.set(file, null)
    }
  }
  return cache.get(file)!
}

const indexPage = Effect.sync(() => {
  const html = readAsset("index.html")
  if (html === null) return notBuilt
  return HttpServerResponse.uint8Array(html, { contentType: "text/html; charset=utf-8" }).pipe(
    HttpServerResponse.setHeaders({ ...SECURITY_HEADERS, "cache-control": "no-cache" })
  )
})

const ASSET = /^\/dashboard\/assets\/([A-Za-z0-9_.-]+)$/

const pageOrAsset = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const pathname = request.url.split("?", 1)[0]!
  const asset = ASSET.exec(pathname)?.[1]
  if (asset === undefined) return yield* indexPage
  const type = CONTENT_TYPES[path.extname(asset)]
  const bytes = type === undefined ? null : readAsset(path.join("assets", asset))
  if (bytes === null) return HttpServerResponse.empty({ status: 404 })
  return HttpServerResponse.uint8Array(bytes, { contentType: type! }).pipe(
    HttpServerResponse.setHeaders({ ...SECURITY_HEADERS, "cache-control": "public, max-age=31536000, immutable" })
  )
})

/** `GET /`: a browser opening the service's address lands on the dashboard (docs/dashboard.md). */
const toDashboard = Effect.succeed(HttpServerResponse.redirect("/dashboard/", { status: 302 }))

export const DashboardPageRoutes = HttpRouter.use(Effect.fn(function*(router) {
  // also matches /dashboard itself
  yield* router.add("GET", "/dashboard/*", handle(pageOrAsset))
  yield* router.add("GET", "/", handle(toDashboard))
}))
