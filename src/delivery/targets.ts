// Where a delivery's URL goes, and what its request line says, without a full URL parse per attempt.
// The targets of the URLs sent to lately are kept by URL text; a URL not kept whose scheme and host
// were seen lately, and whose path and query are plain (characters that WHATWG URL parsing leaves as
// they are, no dot segment), takes its origin from there and its path from the text as written. Any
// other URL goes through `new URL` (and is kept for next time).
import { isIP } from "node:net"
import { InvalidRequestError } from "./classify.ts"

/** What a send needs of its URL: where the connection goes, and what the request line says. */
export interface Target {
  readonly origin: string
  readonly path: string
  readonly hostname: string
  readonly servername: string | null
  /** user:password of the URL, as the Authorization header's credentials; null when none. */
  readonly basicCredentials: string | null
}

/** The part of a Target that depends on the scheme and host only. */
interface Origin {
  readonly origin: string
  readonly hostname: string
  readonly servername: string | null
}

/**
 * Targets by URL text and origins by `scheme://host[:port]` text: a burst to one endpoint parses its
 * URL once, a burst to many paths of one host its origin once. Each map is emptied when it holds
 * KEPT entries (no order to keep, no eviction per entry); a URL that cannot be sent is never kept.
 */
const targets = new Map<string, Target>()
const origins = new Map<string, Origin>()
const KEPT = 4_096

/**
 * A path and query that URL parsing copies unchanged: unreserved and sub-delim characters, `:@/?%`,
 * starting with `/`; no `'` (escaped in the query of http URLs), `\`, `#`, space or non-ASCII.
 */
const PLAIN_PATH = /^\/[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*$/
/** A host (name, IPv4 or bracketed IPv6) and port as parsing reads them: no userinfo, `\\`, query or fragment. */
const PLAIN_HOST = /^[A-Za-z0-9\-.:[\]]+$/
/** A dot segment (`.`, `..`, or either percent-encoded), which parsing would resolve. */
const DOT_SEGMENT = /\/(\.|%2e)/i

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

const keep = <V>(map: Map<string, V>, key: string, value: V): V => {
  if (map.size >= KEPT) map.clear()
  map.set(key, value)
  return value
}

/** The URL parsed in full: the slow path, and the one for anything unusual. */
const parsed = (text: string): Target | InvalidRequestError => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return new InvalidRequestError("INVALID_URL", `Invalid URL: ${text}`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return new InvalidRequestError("INVALID_URL", `Unsupported URL scheme ${url.protocol} in ${text}`)
  }
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1")
  return {
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    hostname,
    servername: url.protocol === "https:" && isIP(hostname) === 0 ? hostname : null,
    basicCredentials: url.username !== "" || url.password !== ""
      ? Buffer.from(`${decode(url.username)}:${decode(url.password)}`).toString("base64")
      : null
  }
}

/** Where the path of a plain http(s) URL starts (the end of its `scheme://host[:port]`); -1 when not plain. */
const pathStart = (text: string): number => {
  const afterScheme = text.startsWith("http://") ? 7 : text.startsWith("https://") ? 8 : -1
  if (afterScheme === -1) return -1
  const slash = text.indexOf("/", afterScheme)
  if (slash === -1) return -1
  if (!PLAIN_HOST.test(text.slice(afterScheme, slash))) return -1
  const path = text.slice(slash)
  if (!PLAIN_PATH.test(path) || DOT_SEGMENT.test(path) || path.endsWith("?")) return -1
  return slash
}

/** The target of a URL text, or why it cannot be sent to. */
export const targetOf = (text: string): Target | InvalidRequestError => {
  const known = targets.get(text)
  if (known !== undefined) return known
  const slash = pathStart(text)
  if (slash !== -1) {
    const prefix = text.slice(0, slash)
    let origin = origins.get(prefix)
    if (origin === undefined) {
      const target = parsed(`${prefix}/`)
      if (target instanceof InvalidRequestError) return parsed(text) // its own message
      origin = keep(origins, prefix, { origin: target.origin, hostname: target.hostname, servername: target.servername })
    }
    return { origin: origin.origin, path: text.slice(slash), hostname: origin.hostname, servername: origin.servername, basicCredentials: null }
  }
  const target = parsed(text)
  return target instanceof InvalidRequestError ? target : keep(targets, text, target)
}
