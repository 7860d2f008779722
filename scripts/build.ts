// `npm run build`, also run before `npm start` and `npm run cli` (prestart, precli): compiles src/
// to plain JavaScript in dist/ (tsc with tsconfig.build.json), so the service runs without Node's
// type stripping (about 20 MB less resident memory); the service's entry is then bundled
// (scripts/bundleService.ts: about 30 MB less). It compiles only when dist/ is missing or
// older than a source file, so an unchanged tree starts at once; it prints nothing unless tsc fails.
// The dashboard's pages (web/) are bundled into dist/web/ by the same build (esbuild,
// scripts/dashboard/bundle.ts), and a change under web/ also makes dist/ stale. The migrations
// (src/store/migrations/*.sql) are copied to dist/store/migrations.
// Processes starting at once build only once: the first takes the lock file, the others wait.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { bundleService } from "./bundleService.ts"
import { bundleDashboard, WEB_DIR } from "./dashboard/bundle.ts"

const root = path.resolve(import.meta.dirname, "..")
const src = path.join(root, "src")
const dist = path.join(root, "dist")
/** Written after a complete build; its modification time is when that build started. */
const stamp = path.join(dist, ".built")
/** Holds the pid of the process building. */
const lock = path.join(root, "dist.lock")

const newestSource = (): number => {
  const files = fs.readdirSync(src, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") || file.endsWith(".sql"))
    .map((file) => path.join(src, file))
  const web = fs.existsSync(WEB_DIR) ? fs.readdirSync(WEB_DIR, { recursive: true, encoding: "utf8" }).map((file) => path.join(WEB_DIR, file)) : []
  return Math.max(...[...files, ...web, path.join(root, "tsconfig.json"), path.join(root, "tsconfig.build.json")]
    .map((file) => fs.statSync(file).mtimeMs))
}

const isFresh = (): boolean => {
  try {
    return fs.statSync(stamp).mtimeMs >= newestSource()
  } catch {
    return false
  }
}

const build = async () => {
  const started = new Date() // a source saved during the build is newer than the stamp: rebuilt next time
  let tsc: string
  try {
    tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
  } catch {
    // a production install (dev dependencies left out) runs a dist/ built beforehand
    process.stderr.write("timewheel: dist/ is missing or older than src/, and TypeScript (a dev dependency) is not installed: " +
      "build with `npm ci && npm run build` before `npm prune --omit=dev` (docs/operations.md, \"Production install\")\n")
    throw new Error("no TypeScript")
  }
  fs.rmSync(dist, { recursive: true, force: true })
  // tsc reports on stdout, which is the CLI's output: its messages go to stderr
  execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { stdio: ["ignore", 2, 2] })
  // the migrations are read from files at start (src/store/schema.ts)
  fs.cpSync(path.join(src, "store", "migrations"), path.join(dist, "store", "migrations"), { recursive: true })
  await bundleService(dist)
  await bundleDashboard()
  fs.writeFileSync(stamp, "")
  fs.utimesSync(stamp, started, started)
}

const takeLock = (): boolean => {
  try {
    fs.writeFileSync(lock, String(process.pid), { flag: "wx" })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
    throw error
  }
}

/** False once the lock is gone or its holder died (a build killed midway). */
const lockHeld = (): boolean => {
  let pid: number
  try {
    pid = Number(fs.readFileSync(lock, "utf8"))
  } catch {
    return false
  }
  if (pid === 0) return true // just created, pid not written yet
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

while (!isFresh()) {
  if (takeLock()) {
    try {
      if (!isFresh()) await build()
    } catch {
      process.exitCode = 1 // tsc, or the lines above, printed why
      break
    } finally {
      fs.rmSync(lock, { force: true })
    }
  } else if (lockHeld()) {
    await sleep(100)
  } else {
    fs.rmSync(lock, { force: true })
  }
}
