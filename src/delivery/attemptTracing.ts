// Spans of the delivery path (docs/tracing.md "The spans"), made straight on the
// tracer without a fiber: one per attempt (kind client: target host and port, method, attempt number,
// lateness, then the status or the error kind) and one per recording of its outcome (a child of the
// attempt, from the outcome until its batch is committed). The attempt continues the trace stored
// with the trigger: a child of the call that scheduled it, or, for a generator's instance, a new trace
// with a link to the call that created the generator (a parent months earlier for every instance would
// misrepresent it). The trace context sent to the target names the attempt's span as parent.
//
// Tracing off, the DeliveryTracing reference is null: the engine tests it once per row and makes no
// span, no object and no string; nothing of this module runs.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import { formatTraceparent, parseTraceparent } from "../domain/traceContext.ts"
import type { DeliveryRow } from "../domain/trigger.ts"
import type { OutgoingTraceContext } from "./request.ts"

/** What an attempt's span ends with (the executor's DeliveryOutcome has these fields). */
export interface TracedOutcome {
  readonly finishedAtMs: number
  readonly httpStatus: number | null
  readonly errorKind: string | null
  readonly errorCode: string | null
}

/** What follows an attempt, as recorded (the deliveries metric's `outcome` label). */
export type RecordedOutcome = "succeeded" | "retrying" | "dead_letter"

export interface RecordingSpan {
  /** Its batch is committed. */
  readonly recorded: () => void
}

export interface AttemptSpan {
  /** `traceparent` (this span as parent) and the stored `tracestate`, to send with the request. */
  readonly outgoing: OutgoingTraceContext
  readonly ended: (outcome: TracedOutcome) => void
  readonly recording: (next: RecordedOutcome) => RecordingSpan
}

export interface AttemptTracer {
  /**
   * The span of the attempt about to leave. `dueAtMs`: when it was due (its time, or its retry's),
   * for the lateness attribute; undefined for replays, recoveries and gated triggers.
   */
  readonly start: (row: DeliveryRow, dueAtMs: number | undefined) => AttemptSpan
}

/** The attempt tracer; null (the default) when tracing is off. */
export const DeliveryTracing = Context.Reference<AttemptTracer | null>("timewheel/DeliveryTracing", { defaultValue: () => null })

export const ATTEMPT_SPAN = "timewheel.delivery.attempt"
export const RECORD_SPAN = "timewheel.delivery.record"

const NANOS_PER_MS = 1_000_000n
const nanosOf = (ms: number) => BigInt(Math.round(ms)) * NANOS_PER_MS

/** host, port of a stored url; the url as given when it does not parse (the attempt fails as invalid_request). */
const targetOf = (url: string): { readonly host: string; readonly port: number | undefined } => {
  try {
    const parsed = new URL(url)
    const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : parsed.protocol === "http:" ? 80 : undefined
    return { host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port }
  } catch {
    return { host: url, port: undefined }
  }
}

const failure = (name: string, message: string) => Exit.fail({ name, message })

export const makeAttemptTracer = (tracer: Tracer.Tracer, clock: Clock.Clock): AttemptTracer => ({
  start: (row, dueAtMs) => {
    const startMs = clock.currentTimeMillisUnsafe()
    const stored = row.traceparent === null ? null : parseTraceparent(row.traceparent)
    const scheduling = stored === null ? undefined : Tracer.externalSpan(stored)
    const instance = row.generatorId !== null
    const span = tracer.span({
      name: ATTEMPT_SPAN,
      parent: scheduling === undefined || instance ? Option.none() : Option.some(scheduling),
      annotations: Context.empty(),
      links: scheduling !== undefined && instance ? [{ span: scheduling, attributes: { "timewheel.link": "generator" } }] : [],
      startTime: nanosOf(startMs),
      kind: "client",
      root: scheduling === undefined || instance,
      sampled: scheduling === undefined || instance ? true : scheduling.sampled
    })
    const target = targetOf(row.url)
    span.attribute("http.request.method", row.method)
    span.attribute("server.address", target.host)
    if (target.port !== undefined) span.attribute("server.port", target.port)
    span.attribute("timewheel.trigger.id", row.id)
    span.attribute("timewheel.project.id", row.projectId)
    span.attribute("timewheel.attempt", row.attempt)
    if (row.generatorId !== null) span.attribute("timewheel.generator.id", row.generatorId)
    if (row.triggeredBy !== null) span.attribute("timewheel.triggered_by", row.triggeredBy)
    if (dueAtMs !== undefined) span.attribute("timewheel.lateness_ms", Math.max(0, startMs - dueAtMs))
    return {
      outgoing: {
        traceparent: formatTraceparent({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled }),
        tracestate: instance ? null : row.tracestate
      },
      ended: (outcome) => {
        if (outcome.httpStatus !== null) span.attribute("http.response.status_code", outcome.httpStatus)
        if (outcome.errorKind !== null) {
          span.attribute("error.type", outcome.errorKind)
          if (outcome.errorCode !== null) span.attribute("timewheel.error.code", outcome.errorCode)
        }
        const exit = outcome.errorKind !== null
          ? failure(outcome.errorKind, outcome.errorCode ?? outcome.errorKind)
          : outcome.httpStatus !== null && outcome.httpStatus >= 400
          ? failure("http_status", `HTTP ${outcome.httpStatus}`)
          : Exit.void
        span.end(nanosOf(outcome.finishedAtMs), exit)
      },
      recording: (next) => {
        const recording = tracer.span({
          name: RECORD_SPAN,
          parent: Option.some(span),
          annotations: Context.empty(),
          links: [],
          startTime: clock.currentTimeNanosUnsafe(),
          kind: "internal",
          root: false,
          sampled: span.sampled
        })
        recording.attribute("timewheel.trigger.id", row.id)
        recording.attribute("timewheel.attempt", row.attempt)
        recording.attribute("timewheel.outcome", next)
        return { recorded: () => recording.end(clock.currentTimeNanosUnsafe(), Exit.void) }
      }
    }
  }
})
