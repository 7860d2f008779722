// The W3C trace context a write stores with its triggers (docs/tracing.md "What goes with a trigger"):
// with tracing on, the server span of the API call being served (its `traceparent`) and the
// `tracestate` the call came with; null when tracing is off or outside an API call (CLI, background).
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"
import { HttpServerRequest } from "effect/http"
import { acceptableTracestate, formatTraceparent, type TraceContext } from "../domain/traceContext.ts"

/** The server span of the call among `span` and its ancestors (inner spans: a transaction, a handler). */
const callSpan = (span: Tracer.Span): Tracer.Span => {
  let current = span
  while (current.kind !== "server") {
    const parent = current.parent
    if (parent._tag === "None" || parent.value._tag !== "Span") return current
    current = parent.value
  }
  return current
}

export const callTraceContext: Effect.Effect<TraceContext | null> = Effect.withFiber((fiber) => {
  if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return Effect.succeed(null)
  const current = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  if (current === undefined || current._tag !== "Span" || current.spanId === "noop") return Effect.succeed(null)
  const span = callSpan(current)
  const request = Context.getOrUndefined(fiber.context, HttpServerRequest.HttpServerRequest)
  return Effect.succeed({
    traceparent: formatTraceparent(span),
    tracestate: acceptableTracestate(request?.headers["tracestate"])
  })
})
