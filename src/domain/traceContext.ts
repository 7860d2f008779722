// The W3C trace context (traceparent, tracestate) a trigger keeps from the call that wrote it, so its
// delivery attempts continue that trace however much later they run (docs/tracing.md "What goes
// with a trigger"). Pure: formatting and reading `traceparent` (version 00).

export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>` */
  readonly traceparent: string
  /** The vendors' list as received, unchanged; null when the call had none. */
  readonly tracestate: string | null
}

export interface TraceParent {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

export const formatTraceparent = (parent: TraceParent): string =>
  `00-${parent.traceId.padStart(32, "0")}-${parent.spanId}-${parent.sampled ? "01" : "00"}`

/** A stored or received `traceparent`; null when it is not a valid version-00 value. */
export const parseTraceparent = (value: string): TraceParent | null => {
  const match = TRACEPARENT.exec(value)
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return null
  return { traceId: match[1]!, spanId: match[2]!, sampled: (parseInt(match[3]!, 16) & 1) === 1 }
}

/** The W3C limits of tracestate: at most 32 entries, 512 characters kept; longer is dropped, not cut. */
export const acceptableTracestate = (value: string | undefined): string | null =>
  value === undefined || value.length === 0 || value.length > 512 || value.split(",").length > 32 ? null : value
