// Every endpoint the service declares is fuzzed (docs/internals.md, `npm run fuzz`): the routes of src/api
// (each `router.add(method, path, …)`, read from the sources so that a new endpoint cannot be
// forgotten) and the ops port's three, each reached by the requests `npm run fuzz` and the fuzz test
// send (everyRequest, test/support/fuzzFamilies.ts) within a fixed sample.
import fc from "fast-check"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { everyRequest, type FuzzContext } from "../support/fuzzFamilies.ts"

const API_DIR = join(import.meta.dirname, "../../src/api")
const MCP_PATH = /export const MCP_PATH = "([^"]+)"/

/** [method, path pattern] of every route in src/api and its folders: `:id` is one segment, `*` the rest. */
const declaredRoutes = (): ReadonlyArray<readonly [string, string]> => {
  const routes: Array<readonly [string, string]> = []
  for (const file of readdirSync(API_DIR, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".ts"))) {
    const text = readFileSync(join(API_DIR, file), "utf8")
    for (const match of text.matchAll(/router\.add\("([A-Z*]+)", (?:"([^"]+)"|(MCP_PATH))/g)) {
      routes.push([match[1]!, match[2] ?? "/mcp"])
    }
    const mcp = MCP_PATH.exec(text)
    if (mcp !== null) expect(mcp[1]).toBe("/mcp")
  }
  return routes
}

const patternOf = (path: string) =>
  new RegExp(`^${path.replace(/\/\*$/, "/.*").replace(/:[a-zA-Z]+/g, "[^/]+")}$`)

const ctx: FuzzContext = {
  key: "ttr_fuzz",
  jobIds: ["01890000-0000-7000-8000-000000000001"],
  policyIds: ["01890000-0000-7000-8000-000000000002"],
  targetPolicyIds: ["01890000-0000-7000-8000-000000000003"],
  session: { cookie: "__Host-timewheel-session=x", projectId: "01890000-0000-7000-8000-000000000004", origin: "https://127.0.0.1:1" }
}

describe("fuzz coverage", () => {
  it("the fuzzers' requests reach every route of the API and the ops port", () => {
    const routes = declaredRoutes()
    // the sources were read: the families the docs name are among them
    expect(routes.length).toBeGreaterThan(40)
    for (const known of ["POST /actions", "GET /dead-letters", "PUT /target-policies/:id", "GET /targets", "* /mcp"]) {
      expect(routes.map(([method, path]) => `${method} ${path}`)).toContain(known)
    }
    const sample = fc.sample(everyRequest(ctx), { numRuns: 30_000, seed: 32 })
    const api = sample.filter((req) => req.port !== "ops").map((req) => ({ method: req.method, path: req.path.split("?", 1)[0]! }))
    const missed = routes.filter(([method, path]) => {
      const pattern = patternOf(path)
      return !api.some((req) => (method === "*" || req.method === method) && pattern.test(req.path))
    })
    expect(missed.map(([method, path]) => `${method} ${path}`)).toEqual([])
    const ops = new Set(sample.filter((req) => req.port === "ops" && req.method === "GET").map((req) => req.path))
    for (const path of ["/livez", "/readyz", "/metrics"]) expect(ops).toContain(path)
  })
})
