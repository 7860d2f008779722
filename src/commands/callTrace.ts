// The W3C trace context a write stores with its triggers (DECISIONS "Tracing and encryption at rest"):
// with tracing on, the server span of the API call being served (its `traceparent`) and the
// `tracestate` the call came with; null when tracing is off or outside an API call (CLI, background).
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"
import { HttpServerRequest } from "effect/http"
import { acceptableTracestate, formatTraceparent, type TraceContext } from "../domain/traceContext.ts"

export const callTraceContext: Effect.Effect<TraceContext | null> = Effect.withFiber((fiber) => {
  if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return Effect.succeed(null)
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  if (span === undefined || span.spanId === "noop") return Effect.succeed(null)
  const request = Context.getOrUndefined(fiber.context, HttpServerRequest.HttpServerRequest)
  return Effect.succeed({
    traceparent: formatTraceparent(span),
    tracestate: acceptableTracestate(request?.headers["tracestate"])
  })
})
