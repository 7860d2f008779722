// Installs the benchmark's own packages (scripts/bench/package.json: the peers graphile-worker and
// pg-boss, which timewheel's install leaves out) with `npm ci` from scripts/bench/package-lock.json
// when they are missing or older than that lockfile. Run before `npm run bench` and `npm run
// typecheck` (which checks the benchmark's sources too); prints nothing when there is nothing to do.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const dir = import.meta.dirname
const lockfile = path.join(dir, "package-lock.json")
/** npm writes it after every install; older than the lockfile means the lockfile changed since. */
const installed = path.join(dir, "node_modules", ".package-lock.json")

const isCurrent = (): boolean => {
  try {
    return fs.statSync(installed).mtimeMs >= fs.statSync(lockfile).mtimeMs
  } catch {
    return false
  }
}

if (!isCurrent()) {
  process.stderr.write("installing the benchmark's packages (scripts/bench: graphile-worker, pg-boss)…\n")
  // settings of the `npm run` that started this (npm_config_*) are the repository's, not this package's
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")))
  try {
    // npm's own output goes to stderr: stdout may be a report
    execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, env, stdio: ["ignore", 2, 2] })
  } catch {
    process.stderr.write("installing scripts/bench's packages failed (npm printed why)\n")
    process.exit(1)
  }
}
