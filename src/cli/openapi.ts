// `openapi [--server <url>]`: prints the OpenAPI document for client generators (api/openapi/openapi.ts):
// the credentials as security schemes, one operation id per method, the /schedule body as raw
// bytes, and a `servers` entry: `--server`, else the URL of the configured HOST and PORT. No
// database needed. The CLI entry point prints `stdout`/`stderr` and exits with `exitCode`.
import { clientDocument, serviceUrl } from "../api/openapi/documents.ts"
import type { AppConfigShape } from "../config.ts"

export type OpenApiResult =
  | { readonly exitCode: 0; readonly stdout: string }
  | { readonly exitCode: 1; readonly stderr: string }

const USAGE = "usage: openapi [--server <https URL of the service>]"

/** `args` are what follows `openapi`. */
export const openApiCommand = (args: ReadonlyArray<string>, config: Pick<AppConfigShape, "prefix" | "host" | "port">): OpenApiResult => {
  let server = serviceUrl(config.host, config.port)
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const value = arg.startsWith("--server=") ? arg.slice("--server=".length) : arg === "--server" ? args[++i] : undefined
    if (value === undefined) return { exitCode: 1, stderr: `unknown argument: ${arg}; ${USAGE}` }
    let url: URL
    try {
      url = new URL(value)
    } catch {
      return { exitCode: 1, stderr: `--server must be a URL, got "${value}"; ${USAGE}` }
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") return { exitCode: 1, stderr: `--server must be an https:// URL, got "${value}"; ${USAGE}` }
    server = value.replace(/\/+$/, "")
  }
  return { exitCode: 0, stdout: JSON.stringify(clientDocument(config.prefix, server), null, 2) }
}
