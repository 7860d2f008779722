// docker-compose.yml and the Dockerfile agree with the service (no container runtime runs here, so
// this reads them): every variable the compose file gives a node is a setting of src/config.ts with a
// value loadConfig accepts, the nodes reach the compose file's PostgreSQL with its credentials, listen
// where their ports and health checks point, get a stop grace period longer than their drain, and the
// image is multi-stage, non-root and runs the compiled JavaScript only, as `npm start` does (its node
// flags and environment, read from package.json by scripts/serviceLaunch.ts).
import { describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { parse } from "yaml"
import { parseStartScript, serviceLaunch } from "../../scripts/serviceLaunch.ts"
import { DEFAULTS, loadConfig } from "../../src/config.ts"

const ROOT = path.resolve(import.meta.dirname, "../..")

interface Service {
  readonly build?: unknown
  readonly image?: string
  readonly environment?: Record<string, unknown> | ReadonlyArray<string>
  readonly ports?: ReadonlyArray<string>
  readonly healthcheck?: { readonly test: ReadonlyArray<string> | string }
  readonly depends_on?: Record<string, { readonly condition: string }>
  readonly stop_grace_period?: string
}

const compose = parse(fs.readFileSync(path.join(ROOT, "docker-compose.yml"), "utf8"), { merge: true }) as {
  readonly services: Record<string, Service>
}
const nodes = Object.entries(compose.services).filter(([, service]) => service.build !== undefined)
const postgres = compose.services.postgres!

/** A service's environment as name → value, from either compose form (map or NAME=value list). */
const environmentOf = (service: Service): Record<string, unknown> => {
  const environment = service.environment ?? {}
  if (!Array.isArray(environment)) return environment as Record<string, unknown>
  return Object.fromEntries((environment as ReadonlyArray<string>).map((entry) => {
    const at = entry.indexOf("=")
    return at < 0 ? [entry, undefined] : [entry.slice(0, at), entry.slice(at + 1)]
  }))
}

const seconds = (duration: string): number => {
  const match = /^(\d+)(s|m)$/.exec(duration)
  if (match === null) throw new Error(`unexpected duration ${duration}`)
  return Number(match[1]) * (match[2] === "m" ? 60 : 1)
}

describe("docker-compose.yml", () => {
  it("runs PostgreSQL and three timewheel nodes built from the Dockerfile, each with a health check", () => {
    expect(nodes.map(([name]) => name)).toEqual(["node-1", "node-2", "node-3"])
    expect(postgres.healthcheck).toBeDefined()
    for (const [, node] of nodes) {
      expect(node.build).toBe(".")
      expect(node.healthcheck).toBeDefined()
      expect(node.depends_on).toEqual({ postgres: { condition: "service_healthy" } })
    }
  })

  it("gives the nodes only settings of src/config.ts, as strings loadConfig accepts", () => {
    const settings = Object.keys(DEFAULTS)
    for (const [name, node] of nodes) {
      const environment = environmentOf(node)
      expect(Object.keys(environment).filter((variable) => !settings.includes(variable)), name).toEqual([])
      for (const [variable, value] of Object.entries(environment)) expect(typeof value, `${name} ${variable}`).toBe("string")
      expect(() => loadConfig(environment as Record<string, string>), name).not.toThrow()
    }
  })

  it("points every node at the compose file's PostgreSQL with its credentials", () => {
    const database = environmentOf(postgres)
    for (const [name, node] of nodes) {
      const url = new URL(loadConfig(environmentOf(node) as Record<string, string>).databaseUrl!)
      expect({ host: url.hostname, user: url.username, password: url.password, database: url.pathname.slice(1) }, name).toEqual({
        host: "postgres",
        user: database.POSTGRES_USER,
        password: database.POSTGRES_PASSWORD,
        database: database.POSTGRES_DB
      })
    }
  })

  it("publishes each node's API port on its own host port, and checks readiness on its ops listener", () => {
    const hostPorts = new Set<string>()
    for (const [name, node] of nodes) {
      const config = loadConfig(environmentOf(node) as Record<string, string>)
      expect(config.host, name).toBe("0.0.0.0")
      expect(node.ports, name).toHaveLength(1)
      const [hostPort, containerPort] = node.ports![0]!.split(":")
      expect(Number(containerPort), name).toBe(config.port)
      hostPorts.add(hostPort!)
      const check = JSON.stringify(node.healthcheck!.test)
      expect(check, name).toContain(`port:${config.opsPort}`)
      expect(check, name).toContain("path:'/readyz'")
    }
    expect(hostPorts.size).toBe(nodes.length)
  })

  it("lets a stopping node drain before it is killed (stop_grace_period > DRAIN_TIMEOUT_SECONDS)", () => {
    for (const [name, node] of nodes) {
      const config = loadConfig(environmentOf(node) as Record<string, string>)
      expect(seconds(node.stop_grace_period ?? "10s"), name).toBeGreaterThan(config.drainTimeoutSeconds)
    }
  })
})

describe("Dockerfile", () => {
  const dockerfile = fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8")
  const instructions = dockerfile.replace(/\\\n/g, " ").split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#"))
  const stages = instructions.reduce<Array<Array<string>>>((all, line) => {
    if (line.startsWith("FROM ")) all.push([])
    all[all.length - 1]?.push(line)
    return all
  }, [])
  const final = stages[stages.length - 1]!

  it("is multi-stage, and its image runs node dist/main.js as a non-root user", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    expect(final[0]).toMatch(/^FROM node:(2[4-9]|[3-9]\d)\b/)
    const user = final.find((line) => line.startsWith("USER "))
    expect(user).toBeDefined()
    expect(user).not.toMatch(/^USER (root|0)\b/)
    expect(final[final.length - 1]).toMatch(/^CMD \["node", (?:"--[^"]+", )*"dist\/main\.js"\]$/)
  })

  it("runs what npm start runs: package.json's node flags in its CMD, the start script's environment in an ENV", () => {
    const launch = serviceLaunch(ROOT)
    expect(final[final.length - 1]).toBe(`CMD ${JSON.stringify(["node", ...launch.nodeFlags, "dist/main.js"]).replace(/","/g, "\", \"")}`)
    const env = final.filter((line) => line.startsWith("ENV ")).flatMap((line) => line.slice(4).trim().split(/\s+/))
    for (const [name, value] of Object.entries(launch.env)) expect(env, name).toContain(`${name}=${value}`)
  })

  it("copies only the compiled JavaScript, the runtime packages and package.json into the image", () => {
    const copied = final.filter((line) => line.startsWith("COPY ")).map((line) => line.split(/\s+/).slice(-2)[0])
    expect(copied.sort()).toEqual(["/app/dist", "/app/node_modules", "/app/package.json"])
    // the packages come from a production install (no TypeScript, vitest, benchmark peers)
    expect(instructions.some((line) => /npm ci --omit=dev\b/.test(line))).toBe(true)
  })

  it("exposes the API port and the ops port its health check reads /readyz on", () => {
    expect(final).toContain("EXPOSE 8443 9464")
    const env = final.find((line) => line.startsWith("ENV "))!
    const config = loadConfig(Object.fromEntries([...env.matchAll(/(\w+)=(\S+)/g)].map((match) => [match[1]!, match[2]!])))
    expect([config.port, config.opsPort]).toEqual([8443, 9464])
    const healthcheck = final.find((line) => line.startsWith("HEALTHCHECK "))!
    expect(healthcheck).toContain("port:process.env.OPS_PORT,path:'/readyz'")
  })
})

describe("the start script, as the scripts that start the service read it (scripts/serviceLaunch.ts)", () => {
  it.each([
    ["exec node dist/main.js", {}, []],
    ["MALLOC_ARENA_MAX=2 exec node --max-semi-space-size=4 dist/main.js", { MALLOC_ARENA_MAX: "2" }, ["--max-semi-space-size=4"]],
    ["A=1 B=x=y exec node --a --b=2 dist/main.js", { A: "1", B: "x=y" }, ["--a", "--b=2"]]
  ])("%s", (start, env, nodeFlags) => {
    expect(parseStartScript(start)).toEqual({ env, nodeFlags })
  })

  it.each(["node dist/main.js", "exec node dist/main.js --flag", "exec node src/main.ts"])("refuses %s", (start) => {
    expect(() => parseStartScript(start)).toThrow(/is not/)
  })
})
