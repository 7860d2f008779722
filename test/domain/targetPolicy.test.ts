// Target policies as tables (docs/protecting-targets.md "Fields", "Errors"): an origin normalised on
// the way in or refused (`Invalid origin: <value>`), a trigger URL's origin, the body's shape (the
// empty 400 with its reason), the validation messages in their order, PUT's merge, and the view.
import { describe, expect, it } from "vitest"
import {
  decodeTargetPolicyBody, mergeTargetPolicyUpdate, newTargetPolicyFields, normaliseOrigin, originOfUrl, type StoredTargetPolicy,
  type TargetPolicyFields, targetPolicyView, validateTargetPolicy
} from "../../src/domain/targetPolicy.ts"

describe("normaliseOrigin", () => {
  it.each([
    ["https://api.example.com", "https://api.example.com"],
    ["HTTPS://API.example.com:443", "https://api.example.com"],
    ["https://api.example.com/", "https://api.example.com"],
    ["http://127.0.0.1:8080", "http://127.0.0.1:8080"],
    ["http://example.com:80", "http://example.com"],
    ["https://example.com:80", "https://example.com:80"],
    ["http://[::1]:9000", "http://[::1]:9000"],
    ["https://bücher.example", "https://xn--bcher-kva.example"],
    ["*", "*"],
    ["https://api.example.com/v1", null],
    ["https://api.example.com?x=1", null],
    ["https://api.example.com/?", null],
    ["https://api.example.com#top", null],
    ["https://user:pw@api.example.com", null],
    ["https://@api.example.com", null],
    ["ftp://api.example.com", null],
    ["api.example.com", null],
    ["https://", null],
    [" https://api.example.com", null],
    ["", null],
    ["**", null]
  ] as const)("%j → %j", (value, expected) => {
    expect(normaliseOrigin(value)).toBe(expected)
  })
})

describe("originOfUrl", () => {
  it.each([
    ["https://API.Example.com:443/hooks?x=1", "https://api.example.com"],
    ["http://user:pw@127.0.0.1:8080/a", "http://127.0.0.1:8080"],
    ["http://localhost/", "http://localhost"],
    ["not a url", null],
    ["mailto:someone@example.com", null]
  ] as const)("%j → %j", (url, origin) => {
    expect(originOfUrl(url)).toBe(origin)
  })
})

describe("decodeTargetPolicyBody: the empty 400", () => {
  it.each([
    [[], "create", "body must be a JSON object"],
    [{ maxConcurrent: 1 }, "create", "origin is required"],
    [{ origin: 5 }, "create", "origin must be a string"],
    [{ origin: "*", maxConcurrent: "1" }, "create", "maxConcurrent must be an integer"],
    [{ origin: "*", maxConcurrent: 1.5 }, "create", "maxConcurrent must be an integer"],
    [{ origin: "*", throughput: { "1w": 1 } }, "create", "throughput window \"1w\": a whole number followed by s, m, h or d"],
    [{ origin: "*", circuitBreaker: 5 }, "create", "circuitBreaker must be an object {failures, cooldownSeconds} or null"],
    [{ origin: "*", circuitBreaker: { failures: 5 } }, "create", "circuitBreaker.cooldownSeconds is required"],
    [{ origin: "*", circuitBreaker: { failures: "5", cooldownSeconds: 30 } }, "create", "circuitBreaker.failures must be an integer"],
    [{ circuitBreaker: { failures: 5, cooldownSeconds: 0.5 } }, "update", "circuitBreaker.cooldownSeconds must be an integer"]
  ] as const)("%j (%s): %s", (json, mode, reason) => {
    expect(mode === "create" ? decodeTargetPolicyBody(json, "create") : decodeTargetPolicyBody(json, "update")).toEqual({ _tag: "Shape", reason })
  })

  it("keeps the fields given; on update, origin is not a field (ignored), nor are unknown ones", () => {
    expect(decodeTargetPolicyBody({ origin: "*", maxConcurrent: 10, throughput: {}, circuitBreaker: null, extra: 1 }, "create"))
      .toEqual({ _tag: "Ok", body: { origin: "*", maxConcurrent: 10, throughput: null, circuitBreaker: null } })
    expect(decodeTargetPolicyBody({ origin: "https://other.example", maxConcurrent: null }, "update"))
      .toEqual({ _tag: "Ok", body: { maxConcurrent: null } })
  })
})

const fields = (over: Partial<TargetPolicyFields>): TargetPolicyFields => ({
  origin: "https://api.example.com", maxConcurrent: null, throughput: null, circuitBreaker: null, ...over
})

describe("validateTargetPolicy: the first message", () => {
  it.each([
    [fields({ origin: "https://api.example.com/v1", maxConcurrent: 0 }), "Invalid origin: https://api.example.com/v1"],
    [fields({}), "At least one of maxConcurrent, throughput or circuitBreaker must be specified"],
    [fields({ maxConcurrent: 0 }), "maxConcurrent must be ≥ 1"],
    [fields({ throughput: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`${i + 1}s`, 1])) }), "At most 8 throughput windows per policy"],
    [fields({ throughput: { "1s": -1 } }), "Throughput rate for '1s' must be a finite number ≥ 0"],
    [fields({ throughput: { "1d": 0.01 } }), "Effective window for '1d' at rate 0.01 exceeds the 30-day maximum (rates below 1 stretch the window by 1/rate)"],
    [fields({ circuitBreaker: { failures: 0, cooldownSeconds: 30 } }), "circuitBreaker.failures must be ≥ 1"],
    [fields({ circuitBreaker: { failures: 5, cooldownSeconds: 0 } }), "circuitBreaker.cooldownSeconds must be between 1 and 3600"],
    [fields({ circuitBreaker: { failures: 5, cooldownSeconds: 3601 } }), "circuitBreaker.cooldownSeconds must be between 1 and 3600"]
  ] as const)("%j → %s", (policy, message) => {
    expect(validateTargetPolicy(policy)).toEqual({ _tag: "Err", message })
  })

  it("a valid policy comes back with its origin normalised; a rate of 0 is a throughput", () => {
    expect(validateTargetPolicy(fields({ origin: "HTTPS://API.example.com:443", throughput: { "1s": 0 } })))
      .toEqual({ _tag: "Ok", fields: fields({ throughput: { "1s": 0 } }) })
    expect(validateTargetPolicy(fields({ origin: "*", circuitBreaker: { failures: 1, cooldownSeconds: 3600 } }))._tag).toBe("Ok")
  })
})

describe("create, update, view", () => {
  const stored: StoredTargetPolicy = {
    ...fields({ maxConcurrent: 10, circuitBreaker: { failures: 5, cooldownSeconds: 30 } }),
    id: "01936b40-1111-7222-8333-444455556666",
    createdAt: new Date("2030-01-14T17:20:00.000Z"),
    updatedAt: new Date("2030-01-14T17:21:00.000Z")
  }

  it("a create starts from everything unset; a PUT replaces what it gives and clears with null", () => {
    expect(newTargetPolicyFields({ origin: "*", maxConcurrent: 3 })).toEqual(fields({ origin: "*", maxConcurrent: 3 }))
    expect(mergeTargetPolicyUpdate(stored, { maxConcurrent: null, throughput: { "1s": 5 } }))
      .toEqual({ ...stored, maxConcurrent: null, throughput: { "1s": 5 } })
  })

  it("the view: fields, id, times, live counts; heldUntil and circuit null for *", () => {
    const live = { queued: 2, inFlight: 3, heldUntil: new Date("2030-01-14T17:22:00.000Z"), circuit: "open" as const }
    expect(targetPolicyView(stored, live)).toEqual({
      id: stored.id, origin: "https://api.example.com", maxConcurrent: 10, throughput: null,
      circuitBreaker: { failures: 5, cooldownSeconds: 30 }, createdAt: "2030-01-14T17:20:00.000Z", updatedAt: "2030-01-14T17:21:00.000Z",
      queued: 2, inFlight: 3, heldUntil: "2030-01-14T17:22:00.000Z", circuit: "open"
    })
    const star = targetPolicyView({ ...stored, origin: "*" }, live)
    expect([star.heldUntil, star.circuit, star.queued]).toEqual([null, null, 2])
  })
})
