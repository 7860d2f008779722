// The dashboard's pure rules: sign-in throttling decisions and session expiry (domain/auth/signin.ts),
// lateness histograms and their percentiles (domain/lateness.ts, the same buckets as migration 6's
// SQL), alert settings' checks and the message of a burst (domain/alerts.ts), the overview's columns
// (domain/overview.ts).
import { assert, describe, it } from "@effect/vitest"
import { deadLetterMessage, decodeAlertSettings } from "../../src/domain/alerts.ts"
import { BadRequest } from "../../src/domain/errors.ts"
import { addHistograms, bucketValue, latenessBucket, percentile } from "../../src/domain/lateness.ts"
import { overviewOf } from "../../src/domain/overview.ts"
import { sessionAlive, sessionCookie, throttleDecision } from "../../src/domain/auth/signin.ts"

describe("sign-in throttling", () => {
  const NOW = 1_000_000_000
  it("allows under the limits; refuses at 5 account or 20 address failures, until the oldest leaves the window", () => {
    assert.deepStrictEqual(throttleDecision({ account: 4, accountOldestMs: NOW - 1000, address: 19, addressOldestMs: NOW - 1000 }, NOW), { _tag: "Allowed" })
    const account = throttleDecision({ account: 5, accountOldestMs: NOW - 60_000, address: 5, addressOldestMs: NOW - 60_000 }, NOW)
    assert.deepStrictEqual(account, { _tag: "Throttled", message: "Too many failed sign-ins for this account; try again in 14 minutes", retryAfterSeconds: 840 })
    const address = throttleDecision({ account: 0, accountOldestMs: null, address: 20, addressOldestMs: NOW - 899_500 }, NOW)
    assert.deepStrictEqual(address, { _tag: "Throttled", message: "Too many failed sign-ins from this address; try again in 1 minute", retryAfterSeconds: 1 })
  })

  it("a session ends at its absolute limit or after the idle limit", () => {
    const session = { expiresAtMs: 10_000, lastSeenAtMs: 1_000 }
    assert.isTrue(sessionAlive(session, 5_000, 5_000))
    assert.isFalse(sessionAlive(session, 6_000, 5_000))
    assert.isFalse(sessionAlive({ expiresAtMs: 10_000, lastSeenAtMs: 9_000 }, 10_000, 5_000))
  })

  it("the cookie's attributes", () => {
    assert.strictEqual(sessionCookie("abc", 60), "__Host-timewheel-session=abc; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Strict")
  })
})

describe("lateness histograms", () => {
  it("buckets about 19 % wide; the reported value within 10 % of any lateness in the bucket", () => {
    for (const ms of [1, 2, 7, 10, 55, 100, 999, 1234, 60_000, 3_600_000]) {
      const value = bucketValue(latenessBucket(ms))
      assert.isTrue(Math.abs(value + 1 - (ms + 1)) / (ms + 1) < 0.1, `${ms} → ${value}`)
    }
    assert.strictEqual(latenessBucket(0), 0)
    assert.strictEqual(latenessBucket(-5), 0)
    assert.strictEqual(latenessBucket(1e15), 127)
  })

  it("percentiles from cumulative counts; histograms add up element-wise", () => {
    const h = addHistograms([0, 0, 3], [1, 0, 0, 0, 1])
    assert.deepStrictEqual(h, [1, 0, 3, 0, 1])
    assert.strictEqual(percentile(h, 0.2), 0)
    assert.strictEqual(percentile(h, 0.5), Math.round(bucketValue(2) * 10) / 10)
    assert.strictEqual(percentile(h, 0.99), Math.round(bucketValue(4) * 10) / 10)
    assert.isNull(percentile([], 0.5))
  })
})

describe("alert settings and messages", () => {
  it("checks the webhook URL and the recipients, trims and drops repeats", () => {
    assert.deepStrictEqual(decodeAlertSettings({ webhookUrl: "", emailRecipients: [" a@b.c ", "a@b.c"] }), { webhookUrl: null, emailRecipients: ["a@b.c"] })
    assert.deepStrictEqual(decodeAlertSettings({}), { webhookUrl: null, emailRecipients: [] })
    const tooMany = decodeAlertSettings({ emailRecipients: Array.from({ length: 21 }, (_, i) => `u${i}@x.y`) })
    assert.instanceOf(tooMany, BadRequest)
    assert.strictEqual((tooMany as BadRequest).message, "emailRecipients: at most 20 addresses")
    assert.instanceOf(decodeAlertSettings([]), BadRequest)
  })

  it("a burst lists its first 10 dead letters and counts the rest", () => {
    const notes = Array.from({ length: 12 }, (_, i) => ({
      triggerId: `t${i}`, url: "https://x.example/hook", error: i === 0 ? "connection_refused: connect ECONNREFUSED" : "HTTP 500", failedAt: new Date(Date.UTC(2030, 0, 1, 0, 0, i))
    }))
    const message = deadLetterMessage("shop", 25, notes)
    assert.strictEqual(message.subject, "[timewheel] 25 dead letters in project shop")
    const lines = message.text.split("\n")
    assert.strictEqual(lines.length, 12)
    assert.strictEqual(lines[1], "• 2030-01-01T00:00:00.000Z trigger t0 → https://x.example/hook (connection_refused: connect ECONNREFUSED)")
    assert.strictEqual(lines[11], "… and 15 more (see Dead letters in the dashboard).")
    assert.strictEqual(deadLetterMessage("shop", 1, notes.slice(0, 1)).subject, "[timewheel] 1 dead letter in project shop")
  })
})

describe("the overview's columns (charts follow the range, bars wide enough to see)", () => {
  const NOW = Date.UTC(2030, 0, 2, 12, 7, 30)
  const MINUTE = 60_000
  const minuteRow = (minuteMs: number, succeeded: number, lateness: Array<number> = [], gatedLateness: Array<number> = []) =>
    ({ minuteMs, succeeded, failed: 0, deadLetters: 0, lateness, gatedLateness })
  const overview = (hours: 1 | 6 | 24, rows: Parameters<typeof overviewOf>[0]["rows"] = [], samples: Parameters<typeof overviewOf>[0]["samples"] = []) =>
    overviewOf({ hours, nowMs: NOW, rows, samples, policies: [{ id: "p", tag: "billing", queued: 3, inFlight: 1 }] })

  it.each([
    [1, 60, 60],
    [6, 300, 73],
    [24, 900, 97]
  ] as const)("%i h: buckets of %i s, %i bars spanning the whole range", (hours, bucketSeconds, bars) => {
    const o = overview(hours)
    assert.strictEqual(o.bucketSeconds, bucketSeconds)
    assert.strictEqual(o.deliveries.t.length, bars)
    assert.isAtLeast(o.range.to - o.range.from, hours * 3600)
    assert.isAtMost(o.range.to - o.range.from, hours * 3600 + bucketSeconds)
    assert.isAtLeast(NOW / 1000, o.range.to - bucketSeconds)
    // every series shares the bucket times, the tag's too, even with no sample at all
    assert.deepStrictEqual(o.lateness.t, o.deliveries.t)
    assert.deepStrictEqual(o.tagPolicies[0]!.t, o.deliveries.t)
    assert.isFalse(o.tagPolicies[0]!.sampled)
  })

  it("24 h: the minutes of a quarter hour add up in one bar; lateness percentiles merge their histograms", () => {
    const start = Date.UTC(2030, 0, 2, 11, 0)
    const rows = Array.from({ length: 15 }, (_, i) => minuteRow(start + i * MINUTE, 2, i === 0 ? [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30] : []))
    const o = overview(24, rows)
    const at = o.deliveries.t.indexOf(start / 1000)
    assert.strictEqual(o.deliveries.succeeded[at], 30)
    assert.strictEqual(o.deliveries.succeeded[at + 1], 0)
    assert.strictEqual(o.lateness.p50[at], o.totals.latenessP50)
    assert.isNull(o.lateness.p50[at + 1])
  })

  it("the scheduler's lateness and the wait of gated triggers are apart", () => {
    const minute = Math.floor(NOW / MINUTE) * MINUTE - 10 * MINUTE
    const o = overview(1, [minuteRow(minute, 2, [1], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])])
    const at = o.lateness.t.indexOf(minute / 1000)
    assert.strictEqual(o.lateness.p99[at], 0)
    assert.isAbove(o.lateness.gatedP99[at]!, 4_000)
    assert.strictEqual(o.totals.latenessP99, 0)
    assert.strictEqual(o.totals.gatedLatenessP99, o.lateness.gatedP99[at])
  })

  it("a tag's samples: the peak of each bucket, null where none was taken", () => {
    const minute = Math.floor(NOW / MINUTE) * MINUTE
    const o = overview(6, [], [
      { tag: "billing", minuteMs: minute - MINUTE, queued: 4, inFlight: 1 },
      { tag: "billing", minuteMs: minute, queued: 9, inFlight: 2 },
      { tag: "other", minuteMs: minute, queued: 50, inFlight: 50 }
    ])
    const policy = o.tagPolicies[0]!
    assert.isTrue(policy.sampled)
    assert.deepStrictEqual([policy.queued, policy.inFlight], [3, 1])
    const last = policy.t.length - 1
    assert.strictEqual(policy.queuedSeries[last], 9)
    assert.strictEqual(policy.inFlightSeries[last], 2)
    assert.deepStrictEqual(policy.queuedSeries.slice(0, last).filter((value) => value !== null), [])
  })
})
