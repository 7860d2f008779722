// A fresh project as the API tests use it: its key, its id, and GET / POST calls authenticated with
// the key header (a POST body is sent as given when it is text, else as its JSON).
import { Effect } from "effect"
import { projectIdOfKey } from "./fixtures.ts"
import { TestServer } from "./server.ts"

export const newProject = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const projectId = yield* projectIdOfKey(key)
  const auth = { "ttr-api-key": key }
  return {
    key,
    projectId,
    get: (path: string) => server.call("GET", path, { headers: auth }),
    post: (path: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }) =>
      server.call("POST", path, { headers: { ...auth, ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) })
  }
})

export type ProjectClient = Effect.Success<typeof newProject>
