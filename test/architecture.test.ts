// The layers' import rules, checked by reading the sources (docs/internals.md "Layout"): every write
// goes through commands/, only store/ speaks to PostgreSQL, and the dependencies run one way.
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const SRC = path.join(import.meta.dirname, "..", "src")

/** The top-level folder of a path under src/ (`api`, `store`, …), or `.` for files directly under src/. */
const layerOf = (file: string) => (file.includes(path.sep) ? file.split(path.sep)[0]! : ".")

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith(".ts") ? [full] : []
  })

interface Source {
  /** Path under src/, e.g. `api/auth.ts`. */
  readonly file: string
  readonly layer: string
  readonly text: string
  readonly imports: ReadonlyArray<Import>
}

/** An import: a file of src/ (`store/db.ts`, with its layer `store`), or a package or builtin as written. */
interface Import {
  readonly spec: string
  readonly layer: string | undefined
}

const IMPORT = /^\s*(?:import|export)\s[^"']*?from\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm

const sources: ReadonlyArray<Source> = sourceFiles(SRC).map((full) => {
  const file = path.relative(SRC, full)
  const text = fs.readFileSync(full, "utf8")
  const imports = [...text.matchAll(IMPORT)].map((m): Import => {
    const written = (m[1] ?? m[2] ?? m[3])!
    if (!written.startsWith(".")) return { spec: written, layer: undefined }
    const spec = path.relative(SRC, path.resolve(path.dirname(full), written))
    return { spec, layer: layerOf(spec) }
  })
  return { file, layer: layerOf(file), text, imports }
})

const inLayer = (layer: string) => sources.filter((source) => source.layer === layer)

/** The imports of `layer` that break `allowed`, as `file → import` lines (empty when all is well). */
const violations = (layer: string, allowed: (imported: Import) => boolean) =>
  inLayer(layer).flatMap((source) => source.imports.filter((imported) => !allowed(imported)).map((imported) => `${source.file} → ${imported.spec}`))

describe("import rules between the layers", () => {
  it("finds the sources", () => {
    expect(inLayer("api").length).toBeGreaterThan(5)
    expect(inLayer("store").length).toBeGreaterThan(5)
  })

  it("api/ imports nothing from store/", () => {
    expect(violations("api", (imported) => imported.layer !== "store")).toEqual([])
  })

  for (const layer of ["commands", "scheduler", "delivery", "gates", "domain", "store", "cluster", "lib", "ops", "jobs", "metrics"]) {
    it(`${layer}/ imports nothing from api/`, () => {
      expect(violations(layer, (imported) => imported.layer !== "api")).toEqual([])
    })
  }

  it("domain/ imports only domain/ and node: builtins", () => {
    expect(violations("domain", (imported) => imported.spec.startsWith("node:") || imported.layer === "domain")).toEqual([])
  })

  it("store/ imports only store/, domain/ and libraries", () => {
    expect(violations("store", (imported) => imported.layer === undefined || ["store", "domain"].includes(imported.layer))).toEqual([])
  })

  it("delivery/ imports nothing from scheduler/ (the scheduler hands work to delivery, not the other way)", () => {
    expect(violations("delivery", (imported) => imported.layer !== "scheduler")).toEqual([])
  })

  it("metrics/metrics.ts, which every layer records into, imports only domain/ and libraries", () => {
    const metrics = sources.find((source) => source.file === path.join("metrics", "metrics.ts"))!
    expect(metrics.imports.filter((imported) => imported.layer !== undefined && imported.layer !== "domain").map((i) => i.spec)).toEqual([])
  })

  it("lib/ and cluster/ import only themselves and libraries", () => {
    expect(violations("lib", (imported) => imported.layer === undefined || imported.layer === "lib")).toEqual([])
    expect(violations("cluster", (imported) => imported.layer === undefined || imported.layer === "cluster")).toEqual([])
  })
})

describe("the folders of src/ depend one way", () => {
  // a file directly under src/ (config.ts, service.ts, main.ts) counts on its own
  const unitOf = (file: string) => (file.includes(path.sep) ? file.split(path.sep)[0]! : file)
  const edges = new Map<string, Set<string>>()
  for (const source of sources) {
    for (const imported of source.imports) {
      if (imported.layer === undefined) continue
      const from = unitOf(source.file)
      const to = unitOf(imported.spec)
      if (from !== to) edges.set(from, new Set([...(edges.get(from) ?? []), to]))
    }
  }
  /** The folders from which `start` is reached again, following imports. */
  const cycleThrough = (start: string): Array<string> => {
    const seen = new Set<string>()
    const walk = (unit: string, trail: Array<string>): Array<string> | undefined => {
      for (const next of edges.get(unit) ?? []) {
        if (next === start) return [...trail, next]
        if (seen.has(next)) continue
        seen.add(next)
        const found = walk(next, [...trail, next])
        if (found !== undefined) return found
      }
      return undefined
    }
    return walk(start, [start]) ?? []
  }

  it("no folder imports, through others, a folder that imports it", () => {
    const cycles = [...edges.keys()].map(cycleThrough).filter((cycle) => cycle.length > 0).map((cycle) => cycle.join(" → "))
    expect(cycles).toEqual([])
  })
})

describe("only store/ speaks to PostgreSQL", () => {
  const SQL_TEXT = /\b(SELECT\s+[\w*(]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|pg_(try_)?advisory|pg_stat_activity|pg_notify|LISTEN\s|NOTIFY\s)/
  const DRIVER = /^(effect\/sql|@effect\/sql-pg)/

  /** The code without its comments (which may well mention LISTEN or a SELECT). */
  const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1")

  it("no SQL text outside store/", () => {
    const offenders = sources.filter((source) => source.layer !== "store" && SQL_TEXT.test(code(source.text))).map((source) => source.file)
    expect(offenders).toEqual([])
  })

  it("no database driver imported outside store/", () => {
    const offenders = sources
      .filter((source) => source.layer !== "store")
      .flatMap((source) => source.imports.filter((imported) => DRIVER.test(imported.spec)).map((imported) => `${source.file} → ${imported.spec}`))
    expect(offenders).toEqual([])
  })
})

describe("the repository stands alone", () => {
  const ROOT = path.join(import.meta.dirname, "..")
  const codeFiles = (dir: string): Array<string> =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) return entry.name === "node_modules" ? [] : codeFiles(full)
      return /\.(ts|tsx|mjs)$/.test(entry.name) ? [full] : []
    })
  // documents the repository does not have, issue numbers, and the header prefix spelled generically
  const CITATION = /\bSPEC\b|DECISIONS|\b[Ii]ssues? \d|svc-|issue "/

  it("no comment cites a document outside it, an issue number, or a header spelled svc-", () => {
    const cited = ["src", "web", "test", "scripts"].flatMap((dir) => codeFiles(path.join(ROOT, dir))).flatMap((full) =>
      fs.readFileSync(full, "utf8").split("\n").flatMap((line, i) =>
        /^\s*(\/\/|\*|\/\*)/.test(line) && CITATION.test(line) ? [`${path.relative(ROOT, full)}:${i + 1}: ${line.trim()}`] : []))
    expect(cited).toEqual([])
  })
})

describe("the dashboard (web/) reads the service's own response types", () => {
  const WEB = path.join(import.meta.dirname, "..", "web")
  /** Every import of web/ that reaches into src/, as `file: statement`. */
  const fromSrc = sourceFiles(WEB).flatMap((full) =>
    [...fs.readFileSync(full, "utf8").matchAll(/^\s*(?:import|export)\s[^"']*?from\s+["']([^"']+)["']/gm)]
      .filter((m) => path.resolve(path.dirname(full), m[1]!).startsWith(SRC + path.sep))
      .map((m) => `${path.relative(WEB, full)}: ${m[0].trim()}`))

  it("imports them from src/domain/ with `import type` only, so nothing of src/ is bundled into the browser's code", () => {
    expect(fromSrc.length).toBeGreaterThan(0)
    expect(fromSrc.filter((line) => !/: import type \{[^}]*\} from "(\.\.\/)+src\/domain\//.test(line))).toEqual([])
  })
})
