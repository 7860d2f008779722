// UUIDv7 ids: the time in the first 48 bits, version 7, RFC variant, unique across refills of the
// random pool, ordered by time.
import { describe, expect, it } from "vitest"
import { isUuid, uuidv7 } from "../../src/domain/ids.ts"

describe("uuidv7", () => {
  it("carries the millisecond time, version 7 and the RFC 4122 variant", () => {
    const id = uuidv7(Date.UTC(2026, 10, 22, 4, 20, 0, 123))
    expect(isUuid(id)).toBe(true)
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(Date.UTC(2026, 10, 22, 4, 20, 0, 123))
    expect(id[14]).toBe("7")
    expect(["8", "9", "a", "b"]).toContain(id[19])
  })

  it("is unique across many ids (several refills of the random pool) and sorts by time", () => {
    const ids = Array.from({ length: 2_000 }, (_, i) => uuidv7(1_000_000 + Math.floor(i / 10)))
    expect(new Set(ids).size).toBe(ids.length)
    expect(uuidv7(5) < uuidv7(6)).toBe(true)
  })
})
