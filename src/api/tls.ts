// TLS material for the HTTPS listener: TLS_CERT_FILE/TLS_KEY_FILE when set, else a self-signed
// certificate for `localhost` generated once into DATA_DIR/tls and reused on later starts.
// The pair is generated in a short-lived child process: `selfsigned` and its X.509/ASN.1 modules
// would otherwise stay loaded in the service for good (measured: about 12 MB more resident memory).
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import type selfsigned from "selfsigned"
import type { AppConfigShape, TlsFiles } from "../config.ts"

type GenerateOptions = NonNullable<Parameters<typeof selfsigned.generate>[1]>

/**
 * Run by `node -e` with one argument, the JSON of [selfsigned's URL, options]: prints the pair as
 * JSON, or one line on stderr and exit code 1.
 */
const GENERATE = `
try {
  const [url, options] = JSON.parse(process.argv[1])
  const { default: selfsigned } = await import(url)
  const pems = await selfsigned.generate([{ name: "commonName", value: "localhost" }],
    { ...options, notBeforeDate: new Date(options.notBeforeDate), notAfterDate: new Date(options.notAfterDate) })
  process.stdout.write(JSON.stringify({ cert: pems.cert, key: pems.private }))
} catch (error) {
  process.stderr.write(String(error).split("\\n")[0])
  process.exitCode = 1
}`

const generate = async (): Promise<TlsFiles> => {
  const notBeforeDate = new Date(Date.now() - 60_000) // certificate validity is wall-clock by nature
  const notAfterDate = new Date(notBeforeDate.getTime() + 5 * 365 * 24 * 3600_000)
  const options: GenerateOptions = {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [{ type: 2, value: "localhost" }, { type: 7, ip: "127.0.0.1" }, { type: 7, ip: "::1" }] }
    ]
  }
  const url = pathToFileURL(createRequire(import.meta.url).resolve("selfsigned")).href
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", GENERATE, JSON.stringify([url, options])])
    .catch((error: { readonly stderr?: string }) => {
      throw new Error(`generating a certificate failed: ${error.stderr || String(error)}`)
    })
  return JSON.parse(stdout) as TlsFiles
}

/** The certificate and key to serve, generating and storing a self-signed pair on first use. */
export const loadTls = async (config: Pick<AppConfigShape, "tls" | "dataDir">): Promise<TlsFiles> => {
  if (config.tls !== undefined) return config.tls
  const dir = path.join(config.dataDir, "tls")
  const certFile = path.join(dir, "cert.pem")
  const keyFile = path.join(dir, "key.pem")
  if (fs.existsSync(certFile) && fs.existsSync(keyFile)) {
    return { cert: fs.readFileSync(certFile, "utf8"), key: fs.readFileSync(keyFile, "utf8") }
  }
  // written to a private directory renamed into place, so processes starting at once on one
  // DATA_DIR never mix one's key with another's certificate: the first rename wins
  const generated = await generate()
  fs.mkdirSync(config.dataDir, { recursive: true })
  const staging = fs.mkdtempSync(path.join(config.dataDir, "tls-"))
  fs.writeFileSync(path.join(staging, "key.pem"), generated.key, { mode: 0o600 })
  fs.writeFileSync(path.join(staging, "cert.pem"), generated.cert)
  try {
    fs.renameSync(staging, dir)
    return generated
  } catch {
    fs.rmSync(staging, { recursive: true, force: true })
    return { cert: fs.readFileSync(certFile, "utf8"), key: fs.readFileSync(keyFile, "utf8") }
  }
}
