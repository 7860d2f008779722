// A local OTLP/HTTP receiver for tracing tests: a node:http server on 127.0.0.1 that accepts
// `POST /v1/traces` in OTLP/JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), answers 200 `{}`, and
// decodes every span it receives (ids, parent, kind, attributes, links, status, resource service
// name). Closed with the scope; loopback only.
import * as http from "node:http"
import * as net from "node:net"
import { Effect } from "effect"
import type { Scope } from "effect"

export interface ReceivedSpan {
  readonly serviceName: string | undefined
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  /** undefined for a root span */
  readonly parentSpanId: string | undefined
  /** OTLP SpanKind: 1 internal, 2 server, 3 client */
  readonly kind: number
  readonly attributes: Readonly<Record<string, unknown>>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  /** OTLP status code: 0 unset, 1 ok, 2 error */
  readonly statusCode: number
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the OTEL_EXPORTER_OTLP_ENDPOINT */
  readonly origin: string
  readonly spans: ReadonlyArray<ReceivedSpan>
  /** Paths of the requests received (all should be /v1/traces). */
  readonly paths: ReadonlyArray<string>
}

interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly doubleValue?: number
  readonly boolValue?: boolean
}

const valueOf = (value: AnyValue): unknown =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue

const attributesOf = (list: ReadonlyArray<{ key: string; value: AnyValue }> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]))

const decode = (body: any): Array<ReceivedSpan> =>
  (body.resourceSpans ?? []).flatMap((resource: any) => {
    const serviceName = attributesOf(resource.resource?.attributes)["service.name"] as string | undefined
    return (resource.scopeSpans ?? []).flatMap((scope: any) =>
      (scope.spans ?? []).map((span: any): ReceivedSpan => ({
        serviceName,
        name: span.name,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId === undefined || span.parentSpanId === "" ? undefined : span.parentSpanId,
        kind: span.kind,
        attributes: attributesOf(span.attributes),
        links: (span.links ?? []).map((link: any) => ({ traceId: link.traceId, spanId: link.spanId })),
        statusCode: span.status?.code ?? 0
      })))
  })

export const otlpReceiver: Effect.Effect<OtlpReceiver, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const spans: Array<ReceivedSpan> = []
    const paths: Array<string> = []
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        paths.push(req.url ?? "")
        try {
          spans.push(...decode(JSON.parse(Buffer.concat(chunks).toString("utf8"))))
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        } catch {
          res.writeHead(400).end()
        }
      })
    })
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject)
      server.listen({ port: 0, host: "127.0.0.1" }, () => resolve((server.address() as net.AddressInfo).port))
    })
    return { server, receiver: { origin: `http://127.0.0.1:${port}`, spans, paths } satisfies OtlpReceiver }
  }),
  ({ server }) =>
    Effect.promise(() =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }))
).pipe(Effect.map(({ receiver }) => receiver))
