// `npm install` on a fresh clone says what it added and nothing else, and the Node it needs is the
// one the README names. The README's "Node.js N or later" is package.json's `engines` (what npm
// needs to fetch the Node 24 the scripts run on); the project's .npmrc keeps npm to errors, since npm
// checks the packages' `engines` against the node running npm (a false EBADENGINE per package
// needing Node 22 on Node 20: 25 lines); every installed package with an install script is in
// `allowScripts` (else npm 11 warns that its script was not run). Checked on the installed tree.
import { describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const ROOT = path.resolve(import.meta.dirname, "..")
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  readonly engines: { readonly node: string }
  readonly allowScripts: Record<string, boolean>
}

/** Every package directory under node_modules (scoped ones included, nested ones too). */
const packageDirs = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory() && !entry.name.startsWith(".")).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.name.startsWith("@")) return packageDirs(full)
    const nested = path.join(full, "node_modules")
    return [full, ...(fs.existsSync(nested) ? packageDirs(nested) : [])]
  })

describe("npm install", () => {
  it("needs the Node the README names", () => {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
    const named = /You need Node\.js (\d+) or later with npm/.exec(readme)
    expect(named).not.toBeNull()
    expect(manifest.engines.node).toBe(`>=${named![1]}`)
  })

  it("prints npm's errors only: the project's .npmrc says so", () => {
    const settings = fs.readFileSync(path.join(ROOT, ".npmrc"), "utf8").split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#"))
    expect(settings).toEqual(["loglevel=error"])
  })

  it("lets every installed package with an install script run it (npm 11 warns about any other)", () => {
    const withScripts = packageDirs(path.join(ROOT, "node_modules")).flatMap((dir) => {
      const file = path.join(dir, "package.json")
      if (!fs.existsSync(file)) return []
      const pkg = JSON.parse(fs.readFileSync(file, "utf8")) as { name?: string; scripts?: Record<string, string> }
      const scripts = pkg.scripts ?? {}
      return "preinstall" in scripts || "install" in scripts || "postinstall" in scripts ? [pkg.name!] : []
    })
    expect(withScripts.length).toBeGreaterThan(0)
    expect(withScripts.filter((name) => manifest.allowScripts[name] === undefined)).toEqual([])
  })
})
