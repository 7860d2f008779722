// A discarding OTLP/HTTP receiver for `npm run bench -- --tracing`: a node:http server on 127.0.0.1
// that reads every export the service sends (POST /v1/traces) and answers 200 `{}`, counting the
// requests and bytes, so the service pays the whole cost of tracing and no collector is needed.
import * as http from "node:http"
import type * as net from "node:net"

export interface OtlpSink {
  /** `http://127.0.0.1:<port>`: the service's OTEL_EXPORTER_OTLP_ENDPOINT */
  readonly origin: string
  readonly received: () => { readonly exports: number; readonly bytes: number }
  readonly stop: () => Promise<void>
}

export const startOtlpSink = async (): Promise<OtlpSink> => {
  let exports = 0
  let bytes = 0
  const server = http.createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (bytes += chunk.length))
    req.on("end", () => {
      exports++
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen({ port: 0, host: "127.0.0.1" }, () => resolve((server.address() as net.AddressInfo).port))
  })
  return {
    origin: `http://127.0.0.1:${port}`,
    received: () => ({ exports, bytes }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
