// Calls from the pages to the service's endpoints: JSON in and out, the session cookie sent by the
// browser (same origin), the chosen project in the Timewheel-Project header, and the API's errors
// as ApiError carrying its status and message (shown to the person as they are): the body's
// message, else (an empty 400, docs/errors.md) the Timewheel-Error header naming what was wrong —
// same origin, so no CORS exposure is needed to read it.
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

let project: string | null = null
/** Called when a call finds no session (expired, signed out elsewhere). */
let onSignedOut: () => void = () => {}

export const setProject = (id: string | null) => {
  project = id
}
export const whenSignedOut = (handler: () => void) => {
  onSignedOut = handler
}

const messageOf = (status: number, text: string, hint: string | null): string => {
  try {
    const body = JSON.parse(text) as { message?: unknown }
    if (typeof body.message === "string") return body.message
  } catch {
    // not JSON: plain text or nothing
  }
  if (text.trim() !== "") return text.trim()
  return hint ?? `HTTP ${status}`
}

export const api = async <A = any>(method: string, path: string, body?: unknown): Promise<A> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (project !== null) headers["timewheel-project"] = project
  if (body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  const text = await response.text()
  if (!response.ok) {
    if (response.status === 401 && path !== "/session") onSignedOut()
    throw new ApiError(response.status, messageOf(response.status, text, response.headers.get("timewheel-error")))
  }
  return (text === "" ? undefined : JSON.parse(text)) as A
}
