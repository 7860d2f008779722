// BLOCK_PRIVATE_TARGETS (docs/settings.md "Settings"): the classification of target addresses as a
// table over the IANA special-purpose registries (IPv4 and IPv6, first and last address of each range
// where it matters, and the public neighbours just outside), then the guard itself with loopback forms
// and an injected resolver, for deliveries and for alert webhooks (the same guard). No request here is
// ever sent to a non-loopback address: blocked ones are refused before connecting, and allowed ones are
// only checked as a pure function.
import type { LookupFunction } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AppConfig, loadConfig } from "../../src/config.ts"
import { AlertSenders } from "../../src/delivery/alertSenders.ts"
import { Executor } from "../../src/delivery/executor.ts"
import { isPrivateAddress } from "../../src/lib/privateTargets.ts"
import type { DeliveryOutcome } from "../../src/delivery/executor.ts"
import { httpServer } from "../support/servers.ts"

/** [address, registry entry] pairs that must be blocked. */
const BLOCKED: ReadonlyArray<readonly [string, string]> = [
  // IPv4 special-purpose registry
  ["0.0.0.0", "0.0.0.0/8 this network"],
  ["0.255.255.255", "0.0.0.0/8 this network"],
  ["10.0.0.0", "10.0.0.0/8 private"],
  ["10.255.255.255", "10.0.0.0/8 private"],
  ["100.64.0.0", "100.64.0.0/10 shared address space"],
  ["100.100.100.200", "100.64.0.0/10 (a cloud metadata address)"],
  ["100.127.255.255", "100.64.0.0/10 shared address space"],
  ["127.0.0.1", "127.0.0.0/8 loopback"],
  ["127.255.255.254", "127.0.0.0/8 loopback"],
  ["169.254.0.1", "169.254.0.0/16 link local"],
  ["169.254.169.254", "169.254.0.0/16 (cloud metadata)"],
  ["172.16.0.0", "172.16.0.0/12 private"],
  ["172.31.255.255", "172.16.0.0/12 private"],
  ["192.0.0.1", "192.0.0.0/24 IETF protocol assignments"],
  ["192.0.0.170", "192.0.0.0/24 (NAT64 discovery)"],
  ["192.0.2.1", "192.0.2.0/24 documentation TEST-NET-1"],
  ["192.31.196.1", "192.31.196.0/24 AS112-v4"],
  ["192.52.193.1", "192.52.193.0/24 AMT"],
  ["192.88.99.1", "192.88.99.0/24 deprecated 6to4 relay anycast"],
  ["192.168.0.1", "192.168.0.0/16 private"],
  ["192.168.255.255", "192.168.0.0/16 private"],
  ["192.175.48.1", "192.175.48.0/24 direct delegation AS112"],
  ["198.18.0.0", "198.18.0.0/15 benchmarking"],
  ["198.19.255.255", "198.18.0.0/15 benchmarking"],
  ["198.51.100.1", "198.51.100.0/24 documentation TEST-NET-2"],
  ["203.0.113.1", "203.0.113.0/24 documentation TEST-NET-3"],
  ["224.0.0.1", "224.0.0.0/4 multicast"],
  ["239.255.255.255", "224.0.0.0/4 multicast"],
  ["240.0.0.1", "240.0.0.0/4 reserved"],
  ["255.255.255.255", "255.255.255.255/32 limited broadcast"],
  // IPv6 special-purpose registry
  ["::", "::/128 unspecified"],
  ["::1", "::1/128 loopback"],
  ["::ffff:127.0.0.1", "::ffff:0:0/96 IPv4-mapped (loopback)"],
  ["::ffff:7f00:1", "::ffff:0:0/96 IPv4-mapped, hex form"],
  ["::ffff:10.0.0.1", "::ffff:0:0/96 IPv4-mapped (private)"],
  ["::ffff:169.254.169.254", "::ffff:0:0/96 IPv4-mapped (metadata)"],
  ["::ffff:198.18.0.1", "::ffff:0:0/96 IPv4-mapped (benchmarking)"],
  ["::ffff:0.0.0.0", "::ffff:0:0/96 IPv4-mapped (unspecified)"],
  ["::7f00:1", "::/96 IPv4-compatible (deprecated; outside 2000::/3)"],
  ["64:ff9b::7f00:1", "64:ff9b::/96 IPv4/IPv6 translation (NAT64)"],
  ["64:ff9b::808:808", "64:ff9b::/96 NAT64, even of a public IPv4"],
  ["64:ff9b:1::1", "64:ff9b:1::/48 local-use translation"],
  ["100::1", "100::/64 discard-only"],
  ["2001::1", "2001::/32 Teredo"],
  ["2001:2::1", "2001:2::/48 benchmarking"],
  ["2001:3::1", "2001:3::/32 AMT"],
  ["2001:4:112::1", "2001:4:112::/48 AS112-v6"],
  ["2001:10::1", "2001:10::/28 deprecated ORCHID"],
  ["2001:20::1", "2001:20::/28 ORCHIDv2"],
  ["2001:30::1", "2001:30::/28 drone remote ID"],
  ["2001:db8::1", "2001:db8::/32 documentation"],
  ["2002:7f00:1::1", "2002::/16 6to4"],
  ["2620:4f:8000::1", "2620:4f:8000::/48 direct delegation AS112"],
  ["3fff::1", "3fff::/20 documentation"],
  ["5f00::1", "5f00::/16 segment routing SIDs"],
  ["fc00::1", "fc00::/7 unique local"],
  ["fd00:ec2::254", "fc00::/7 (cloud metadata)"],
  ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fc00::/7 unique local"],
  ["fe80::1", "fe80::/10 link local"],
  ["fe80::1%eth0", "fe80::/10 link local with a zone"],
  ["febf:ffff::1", "fe80::/10 link local"],
  ["fec0::1", "fec0::/10 deprecated site local"],
  ["ff02::1", "ff00::/8 multicast"],
  ["4000::1", "outside 2000::/3 global unicast (unallocated)"],
  ["64:ff9c::1", "next to NAT64, outside 2000::/3"],
  ["[::1]", "a bracketed literal as a URL host carries it"]
]

/** Public unicast addresses, many right next to a blocked range: allowed. */
const ALLOWED: ReadonlyArray<string> = [
  "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0",
  "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "192.0.1.0", "192.0.3.0", "192.167.255.255",
  "192.169.0.0", "198.17.255.255", "198.20.0.0", "198.51.99.255", "203.0.112.255", "223.255.255.255",
  "2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450:4001::1", "2001:200::1", "::ffff:8.8.8.8",
  "2003::1", "3ffe::1", "example.com", "localhost", ""
]

describe("isPrivateAddress: the IANA special-purpose registries", () => {
  it.each(BLOCKED)("%s is blocked (%s)", (address) => {
    assert.isTrue(isPrivateAddress(address))
  })
  it.each(ALLOWED.map((address) => [address]))("%j is not blocked", (address) => {
    assert.isFalse(isPrivateAddress(address))
  })
})

// ---------------------------------------------------------------------------------------------------------
// The guard: only loopback targets, or names resolved by an injected resolver to blocked addresses.

const send = (url: string, lookup?: LookupFunction) =>
  Effect.gen(function*() {
    const executor = yield* Executor
    return yield* Effect.promise(() =>
      executor.send({ url, method: "POST", headers: [], body: null, contentType: null, timeoutSeconds: 5 }))
  }).pipe(Effect.provide(Executor.layer({ blockPrivateTargets: true, connectTimeoutMs: 1_000, ...(lookup === undefined ? {} : { lookup }) })))

/** Resolves every name to `addresses` without any DNS query. */
const resolvesTo = (...addresses: ReadonlyArray<string>): LookupFunction => (_hostname, options, callback) => {
  const all = addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))
  process.nextTick(() => (options.all ? callback(null, all) : callback(null, all[0]!.address, all[0]!.family)))
}

const assertBlocked = (o: DeliveryOutcome, what: string) => {
  assert.strictEqual(o.errorKind, "invalid_request", `${what}: ${o.errorKind} ${o.errorCode} ${o.errorMessage}`)
  assert.strictEqual(o.errorCode, "PRIVATE_TARGET", what)
  assert.isNull(o.httpStatus, what)
}

describe("the guard", () => {
  it.live("every loopback form of a literal is refused before connecting", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const port = target.port
      for (const host of ["127.0.0.1", "127.1", "0x7f.0.0.1", "2130706433", "0177.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "[0:0:0:0:0:ffff:7f00:1]"]) {
        assertBlocked(yield* send(`http://${host}:${port}/`), host)
      }
      assert.strictEqual(target.connections(), 0)
    }))

  it.live("a name resolving to a special-purpose address is refused on what it resolves to", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      for (const address of ["198.18.0.1", "64:ff9b::7f00:1", "100.64.0.1", "192.0.0.170", "::ffff:127.0.0.1", "2002:7f00:1::1"]) {
        const o = yield* send(`http://tenant.test:${target.port}/`, resolvesTo(address))
        assertBlocked(o, address)
        assert.strictEqual(o.errorMessage, `Target address ${address} (of tenant.test) is private and BLOCK_PRIVATE_TARGETS is on`)
      }
      // every address blocked: refused, naming the first
      assertBlocked(yield* send(`http://tenant.test:${target.port}/`, resolvesTo("198.18.0.1", "127.0.0.1", "fd00::1")), "all private")
      assert.strictEqual(target.connections(), 0)
    }))
})

describe("alert webhooks go through the same guard", () => {
  const MESSAGE = { subject: "s", text: "dead letters" }
  /** A webhook sent by AlertSenders with BLOCK_PRIVATE_TARGETS as given; its outcome (null: taken). */
  const webhook = (url: string, block: boolean, lookup?: LookupFunction) =>
    Effect.gen(function*() {
      const senders = yield* AlertSenders
      return yield* senders.webhook(url, MESSAGE)
    }).pipe(Effect.provide(AlertSenders.layerWith({ lookup }).pipe(
      Layer.provide(Layer.succeed(AppConfig)(loadConfig({ BLOCK_PRIVATE_TARGETS: String(block) })))
    )))

  it.live("loopback literals and a name resolving to loopback are refused before connecting; with the guard off they are sent", () =>
    Effect.gen(function*() {
      const hooks = yield* httpServer()
      for (const host of ["127.0.0.1", "[::ffff:127.0.0.1]", "[::1]", "0x7f.0.0.1"]) {
        const outcome = yield* webhook(`http://${host}:${hooks.port}/chat`, true)
        assert.match(outcome ?? "", /is private and BLOCK_PRIVATE_TARGETS is on/, host)
      }
      for (const address of ["127.0.0.1", "::ffff:127.0.0.1"]) {
        assert.strictEqual(
          yield* webhook(`http://localhost:${hooks.port}/chat`, true, resolvesTo(address)),
          `Target address ${address} (of localhost) is private and BLOCK_PRIVATE_TARGETS is on`
        )
      }
      assert.strictEqual(hooks.connections(), 0)
      assert.deepStrictEqual(hooks.received, [])

      // the guard off: the same webhooks arrive
      assert.isNull(yield* webhook(`http://127.0.0.1:${hooks.port}/chat`, false))
      assert.isNull(yield* webhook(`http://localhost:${hooks.port}/chat`, false, resolvesTo("127.0.0.1")))
      assert.deepStrictEqual(hooks.received.map((r) => [r.path, JSON.parse(r.body.toString())]), [
        ["/chat", { text: "dead letters" }], ["/chat", { text: "dead letters" }]
      ])
    }))

  it.live("of a webhook's answer only the first KiB is read: an endless answer is not waited for", () =>
    Effect.gen(function*() {
      const hooks = yield* httpServer((_req, res) => {
        res.writeHead(500)
        res.write("x".repeat(4096)) // and never ends
      })
      const started = Date.now()
      const outcome = yield* webhook(`http://127.0.0.1:${hooks.port}/chat`, false)
      assert.strictEqual(outcome, `HTTP 500: ${"x".repeat(290)}`)
      assert.isBelow(Date.now() - started, 5_000)
    }))
})
