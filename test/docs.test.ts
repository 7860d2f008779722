// The documentation a clone holds stands on its own: every relative link of README.md, BENCHMARKS.md
// and docs/*.md leads to a file of the repository (never to ../shared, which a clone lacks) and,
// with an anchor, to a heading of that file (GitHub's anchors); every page of docs/ is listed in
// docs/README.md, which README.md links, and starts with its header comment. And it stays true to
// the code: every setting the service reads (config.ts DEFAULTS, and the diagnostics read from the
// environment elsewhere in src/) has a row in docs/settings.md,
// and every command of the CLI's usage is listed there; README.md stays a short newcomer's page
// that keeps its endpoints table and "More docs" list (where other features add a row or a link).
import { describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { USAGE } from "../src/cli/main.ts"
import { DEFAULTS } from "../src/config.ts"

const ROOT = path.resolve(import.meta.dirname, "..")
const DOCS = path.join(ROOT, "docs")
const pages = [
  "README.md",
  "BENCHMARKS.md",
  ...fs.readdirSync(DOCS).filter((name) => name.endsWith(".md")).map((name) => path.join("docs", name))
]

/** GitHub's anchor of a heading: lowercase, punctuation dropped (hyphens and underscores kept), spaces as hyphens. */
const slug = (heading: string) =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-")

/** The anchors of a Markdown file's headings, repeats numbered as GitHub does (`x`, `x-1`, …). */
const anchorsOf = (file: string): Set<string> => {
  const text = fs.readFileSync(file, "utf8").replace(/^```[\s\S]*?^```/gm, "")
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const match of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(match[1]!)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

/** Every inline link target of a Markdown file outside code blocks. */
const linksOf = (file: string): Array<string> => {
  const text = fs.readFileSync(file, "utf8").replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "")
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!)
}

describe("documentation links", () => {
  for (const page of pages) {
    it(`${page}: relative links lead to files and headings of the repository`, () => {
      const file = path.join(ROOT, page)
      const broken: Array<string> = []
      for (const link of linksOf(file)) {
        if (/^[a-z]+:/i.test(link)) continue // https:, mailto:
        const [target, anchor] = link.split("#") as [string, string | undefined]
        const resolved = target === "" ? file : path.resolve(path.dirname(file), target)
        if (!resolved.startsWith(ROOT + path.sep) && resolved !== ROOT) {
          broken.push(`${link} (outside the repository)`)
          continue
        }
        if (!fs.existsSync(resolved)) {
          broken.push(`${link} (no such file)`)
          continue
        }
        if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(resolved).has(anchor)) {
          broken.push(`${link} (no such heading)`)
        }
      }
      expect(broken).toEqual([])
    })
  }

  it("docs/README.md lists every page of docs/, and each page starts with its header comment", () => {
    const index = fs.readFileSync(path.join(DOCS, "README.md"), "utf8")
    for (const name of fs.readdirSync(DOCS).filter((entry) => entry.endsWith(".md"))) {
      if (name !== "README.md") expect(index, name).toContain(`](${name})`)
      expect(fs.readFileSync(path.join(DOCS, name), "utf8"), name).toMatch(new RegExp(`^<!-- docs/${name.replace(".", "\\.")}: `))
    }
  })
})

describe("the docs say what the code does", () => {
  const settingsPage = fs.readFileSync(path.join(DOCS, "settings.md"), "utf8")

  it("every setting of config.ts has a row in docs/settings.md", () => {
    const missing = Object.keys(DEFAULTS).filter((name) => !new RegExp(`^\\| \`${name}\`( / \`[A-Z_]+\`)? \\|`, "m").test(settingsPage) &&
      !new RegExp(`^\\| \`[A-Z_]+\` / \`${name}\` \\|`, "m").test(settingsPage))
    expect(missing).toEqual([])
  })

  it("every variable the service reads from the environment outside config.ts has a row in docs/settings.md too", () => {
    const sources = (dir: string): Array<string> => fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? sources(path.join(dir, entry.name)) : entry.name.endsWith(".ts") ? [path.join(dir, entry.name)] : []
    )
    const read = new Set(sources(path.join(ROOT, "src")).flatMap((file) =>
      [...fs.readFileSync(file, "utf8").matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!)
    ))
    expect(read.size).toBeGreaterThan(0)
    const missing = [...read].filter((name) => !settingsPage.includes(`| \`${name}\``))
    expect(missing).toEqual([])
  })

  it("every command of the CLI's usage is listed in docs/settings.md", () => {
    const commands = USAGE.split("\n").slice(1).map((line) => line.trim().split(/\s{2,}/)[0]!.replace(/\s*\(.*$/, ""))
    expect(commands.length).toBeGreaterThan(5)
    const missing = commands.filter((command) => !settingsPage.includes(`| \`${command}\``))
    expect(missing).toEqual([])
  })
})

describe("README.md is a newcomer's page", () => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")

  it("short, with the first steps, the endpoints table and the More docs list", () => {
    expect(readme.split("\n").length).toBeLessThan(200)
    for (const heading of ["## Five minutes: from a clone to a delivered request", "## The dashboard", "## Endpoints", "## More docs"]) {
      expect(readme).toContain(heading)
    }
    for (const step of ["npm install", "npm start", "project create my-project", "key create my-project", "admin create you@example.com"]) {
      expect(readme).toContain(step)
    }
  })

  it("every page of docs/ is reachable: linked from README.md or from docs/README.md, which README.md links", () => {
    expect(readme).toContain("](docs/README.md)")
    const index = fs.readFileSync(path.join(DOCS, "README.md"), "utf8")
    const unreachable = fs.readdirSync(DOCS).filter((name) => name.endsWith(".md") && name !== "README.md")
      .filter((name) => !readme.includes(`](docs/${name}`) && !index.includes(`](${name}`))
    expect(unreachable).toEqual([])
  })
})
