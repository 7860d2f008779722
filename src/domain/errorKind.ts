// Error kinds of a delivery attempt that got no HTTP response (docs/retries.md "Error kinds").
// For dns, connect_timeout, connection_refused, unreachable and tls nothing reached the target;
// for connection_reset and timeout the request may have reached it.

export const ERROR_KINDS = [
  "dns",
  "connect_timeout",
  "connection_refused",
  "unreachable",
  "tls",
  "connection_reset",
  "timeout",
  "protocol",
  "body_read",
  "invalid_request",
  "unknown"
] as const

export type ErrorKind = (typeof ERROR_KINDS)[number]

export const isErrorKind = (value: string): value is ErrorKind =>
  (ERROR_KINDS as ReadonlyArray<string>).includes(value)
