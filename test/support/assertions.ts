// Assertions on the API's error responses (docs/errors.md): `null` means the empty-body form.
import { assert } from "@effect/vitest"
import type { TestResponse } from "./server.ts"

const TAGS: Record<number, string> = {
  400: "BadRequest", 401: "Unauthorized", 402: "QuotaExceeded", 404: "NotFound", 409: "Conflict", 410: "Gone", 413: "ContentTooLarge"
}

/** `status` with `{"_tag","message"}` JSON, or with an empty body and no Content-Type when `message` is null. */
export const assertError = (response: TestResponse, status: number, message: string | null) => {
  assert.strictEqual(response.status, status, response.text)
  if (message === null) {
    assert.strictEqual(response.text, "")
    assert.isUndefined(response.headers["content-type"])
    return
  }
  assert.strictEqual(response.headers["content-type"], "application/json")
  assert.deepStrictEqual(response.json(), { _tag: TAGS[status], message })
}

/** `204` with an empty body. */
export const assertNoContent = (response: TestResponse) => {
  assert.strictEqual(response.status, 204, response.text)
  assert.strictEqual(response.text, "")
}
