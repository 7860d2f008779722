// Tracing (docs/tracing.md "Turning it on"): with an OTLP endpoint in OpenTelemetry's
// environment (config.ts TracingSettings), Effect's own OTLP/HTTP exporter (effect/observability
// OtlpTracer: batches, retries, flushes when the service stops) becomes the tracer of the service,
// the HTTP server makes a server span per API call (continuing an incoming `traceparent`), and
// delivery gets its attempt tracer (delivery/attemptTracing.ts). Spans stay disabled everywhere else
// (service.ts loggingLayer: background loops and SQL statements make none). Without an endpoint
// every layer here is empty: tracing costs nothing.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as References from "effect/References"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import type { TracingSettings } from "../config.ts"
import { DeliveryTracing, makeAttemptTracer } from "../delivery/attemptTracing.ts"

/**
 * The start log's line when tracing is on (docs/tracing.md): where spans go, how, and under which
 * service name; the endpoint without any user and password it holds, and never the export headers.
 */
export const tracingStartLine = (settings: TracingSettings): string => {
  const url = new URL(settings.url)
  url.username = ""
  url.password = ""
  return `tracing on: spans exported to ${url.toString()} (OTLP ${settings.protocol}) as service ${settings.serviceName}`
}

/** How long a stopping service waits for its last spans to be exported. */
const SHUTDOWN_TIMEOUT = "3 seconds"

/** The OTLP tracer and the delivery's attempt tracer; empty when tracing is off. */
export const tracingLayer = (settings: TracingSettings | null) => {
  if (settings === null) return Layer.empty
  const exporter = OtlpTracer.layer({
    url: settings.url,
    resource: { serviceName: settings.serviceName },
    headers: settings.headers,
    exportInterval: settings.exportIntervalMs,
    shutdownTimeout: SHUTDOWN_TIMEOUT
  }).pipe(
    Layer.provide(settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer)
  )
  const attempts = Layer.effect(
    DeliveryTracing,
    Effect.gen(function*() {
      return makeAttemptTracer(yield* Effect.tracer, yield* Clock.Clock)
    })
  )
  return attempts.pipe(Layer.provideMerge(exporter))
}

/** Spans enabled for the API's requests (their server spans and what runs inside); empty when tracing is off. */
export const apiTracingLayer = (settings: TracingSettings | null): Layer.Layer<never> =>
  settings === null ? Layer.empty : Layer.succeed(References.TracerEnabled)(true)
