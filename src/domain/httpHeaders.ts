// Header rules shared by the ways a request to send is written: /schedule's stored headers, the MCP
// tool's header arguments, and the headers a bulk replay adds (docs/scheduling.md "What is stored and
// sent"). Pure.

/** An HTTP method or header name: an RFC 9110 token. */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Headers that describe a call rather than the request to send: the host (the target sees its URL's),
 * the length (recomputed), hop-by-hop headers and `Expect`. Never stored, never added to a delivery.
 */
export const CALL_HEADERS: ReadonlySet<string> = new Set([
  "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
  "proxy-connection", "expect"
])

/** What /schedule does not store among the request's headers: the call's, and Content-Type (kept apart, with the body). */
export const NOT_STORED_HEADERS: ReadonlySet<string> = new Set([...CALL_HEADERS, "content-type"])
