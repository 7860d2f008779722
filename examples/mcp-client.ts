// examples/mcp-client.ts: an MCP client (the official TypeScript SDK, @modelcontextprotocol/sdk)
// talking to timewheel's /mcp as an AI assistant's host would: it connects with an API key, lists
// the tools, schedules a GET of TARGET_URL for now with schedule_trigger, and reads the trigger back
// with get_job until it has an outcome (delivered: exit 0; anything else, or nothing within 10 s: a
// line on stderr, exit 1). Run it from the repository, next to a running `npm start`:
//
//   KEY=$(npm run --silent cli -- key create my-project)
//   NODE_EXTRA_CA_CERTS=./data/tls/cert.pem TIMEWHEEL_KEY=$KEY npm exec -- node examples/mcp-client.ts
//
// NODE_EXTRA_CA_CERTS makes Node trust the certificate npm start generated for localhost (without
// it the connection fails with "self-signed certificate"; a service with TLS_CERT_FILE from a known
// authority needs nothing). TIMEWHEEL_URL (default https://localhost:8443/mcp) and TARGET_URL
// (default http://127.0.0.1:$OPS_PORT/livez, the service's own liveness endpoint on its OPS_PORT,
// 9464 unless set, so the example needs no network) may be changed. Node 24 runs this TypeScript
// file as it is.
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"

const url = process.env.TIMEWHEEL_URL ?? "https://localhost:8443/mcp"
const opsPort = process.env.OPS_PORT === undefined || process.env.OPS_PORT === "" ? "9464" : process.env.OPS_PORT
const target = process.env.TARGET_URL ?? (opsPort === "off" ? undefined : `http://127.0.0.1:${opsPort}/livez`)
const key = process.env.TIMEWHEEL_KEY
if (key === undefined || key === "") {
  console.error("set TIMEWHEEL_KEY to an API key: npm run --silent cli -- key create <project>")
  process.exit(1)
}
if (target === undefined) {
  console.error("OPS_PORT is off, so the service has no /livez to send to: set TARGET_URL")
  process.exit(1)
}

/** How long the trigger may take to be delivered. */
const WAIT_MS = 10_000

/** A tool's answer: its JSON text, or the error it reports ({"_tag","message"}, as the HTTP API answers). */
const call = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = await client.callTool({ name, arguments: args })
  const text = (result.content as Array<{ type: string; text: string }>)[0]!.text
  if (result.isError === true) throw new Error(`${name} failed: ${text}`)
  return JSON.parse(text)
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { authorization: `Bearer ${key}` } }
})
const client = new Client({ name: "timewheel-example", version: "1.0.0" })
await client.connect(transport)
try {
  const { tools } = await client.listTools()
  console.log(`tools: ${tools.map((tool) => tool.name).join(", ")}`)

  const scheduled = await call(client, "schedule_trigger", { url: target, method: "GET", scheduledAt: "now" })
  console.log(`scheduled: ${scheduled.triggerId} (${scheduled.status}) at ${scheduled.scheduledAt}`)

  const deadline = Date.now() + WAIT_MS
  let job = await call(client, "get_job", { id: scheduled.triggerId })
  while (job.outcome === null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    job = await call(client, "get_job", { id: scheduled.triggerId })
  }
  if (job.outcome === "delivered") console.log(`trigger ${job.id}: ${job.status}, ${job.outcome}`)
  else {
    console.error(job.outcome === null
      ? `trigger ${job.id}: not delivered within ${WAIT_MS / 1000} s (status ${job.status}, ${job.attempts} attempts): is ${target} reachable from the service?`
      : `trigger ${job.id}: ${job.status}, ${job.outcome} (see its executions: get_job, list_executions)`)
    process.exitCode = 1
  }
} finally {
  await client.close()
}
