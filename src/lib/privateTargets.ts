// The private-target guard (BLOCK_PRIVATE_TARGETS) of every outbound HTTP request the service makes —
// deliveries (delivery/executor.ts) and alert webhooks (delivery/alertSenders.ts): an undici
// connector that refuses an IP literal outside public unicast before connecting, and resolves a host
// name itself, connecting only to the resolved addresses that pass the same check. Refusals are a
// PrivateTargetError (code PRIVATE_TARGET) naming the address.
import ipaddr from "ipaddr.js"
import * as dns from "node:dns"
import * as net from "node:net"
import { buildConnector } from "undici"

/** IANA "IPv6 Address Space": only 2000::/3 is allocated as global unicast. */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3")

/**
 * Whether an IP address is anything but a public unicast one: ipaddr.js classifies it against the IANA
 * special-purpose registries (loopback, private, carrier-grade NAT, link-local incl. metadata
 * 169.254.169.254, unique local incl. fd00:ec2::254, benchmarking 198.18.0.0/15, documentation,
 * reserved, multicast, broadcast, NAT64 64:ff9b::/96, 6to4, Teredo, discard, …) and every range but
 * `unicast` is blocked; IPv4-mapped IPv6 (::ffff:a.b.c.d) is classified as its IPv4 address; an IPv6
 * address outside 2000::/3 (e.g. IPv4-compatible ::a.b.c.d) is blocked too. A bracketed IPv6 literal
 * is read without its brackets; anything that is not an IP address (a host name) is not blocked here:
 * its resolved addresses are.
 */
export const isPrivateAddress = (address: string): boolean => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  if (net.isIP(bare) === 0) return false
  const parsed = ipaddr.process(bare)
  if (parsed.range() !== "unicast") return true
  return parsed.kind() === "ipv6" && !parsed.match(IPV6_GLOBAL_UNICAST)
}

/** A connection refused by the guard, before any packet left for `address`. */
export class PrivateTargetError extends Error {
  readonly code = "PRIVATE_TARGET"
  constructor(address: string, host?: string) {
    super(`Target address ${address}${host !== undefined && host !== address ? ` (of ${host})` : ""} is private and BLOCK_PRIVATE_TARGETS is on`)
    this.name = "PrivateTargetError"
  }
}

/** Resolves all addresses and keeps the public ones; the socket connects only to what passed the check. */
const guardedLookup = (base: net.LookupFunction): net.LookupFunction => (hostname, options, callback) => {
  base(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, [])
    const all = typeof addresses === "string" ? [{ address: addresses, family: net.isIP(addresses) }] : addresses
    const allowed = all.filter((a) => !isPrivateAddress(a.address))
    if (allowed.length === 0) {
      const none = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
        code: "ENOTFOUND",
        syscall: "getaddrinfo",
        hostname
      })
      return callback(all.length > 0 ? new PrivateTargetError(all[0]!.address, hostname) : none, [])
    }
    if (options.all === true) return callback(null, allowed)
    callback(null, allowed[0]!.address, allowed[0]!.family)
  })
}

export interface TargetConnectorOptions {
  /** BLOCK_PRIVATE_TARGETS: refuse every address outside public unicast. */
  readonly blockPrivateTargets: boolean
  /** Connect (DNS, TCP, TLS) timeout in ms. */
  readonly timeoutMs: number
  /** Resolver used for host names (default `dns.lookup`); tests inject one so no query leaves the machine. */
  readonly lookup?: net.LookupFunction | undefined
}

/** undici's `connect` option for an Agent whose every connection goes through the guard when it is on. */
export const targetConnector = (options: TargetConnectorOptions): buildConnector.connector => {
  const base: net.LookupFunction = options.lookup ?? (dns.lookup as net.LookupFunction)
  const connector = buildConnector({
    timeout: options.timeoutMs,
    allowH2: false,
    lookup: options.blockPrivateTargets ? guardedLookup(base) : base
  })
  return (opts, callback) => {
    // IP literals never reach the lookup: check them here.
    if (options.blockPrivateTargets && isPrivateAddress(opts.hostname)) {
      return callback(new PrivateTargetError(opts.hostname), null)
    }
    connector(opts, callback)
  }
}
