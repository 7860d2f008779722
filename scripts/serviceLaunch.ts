// How the service is started, read from package.json's "start" script, the one place it is written
// (`[NAME=value ...] exec node [--flag ...] dist/main.js`): the scripts that start the service
// themselves (the bench, bench:scale, chaos, fuzz, npm run cluster) run what `npm start` runs, and
// test/service/compose.test.ts holds the Dockerfile to the same environment and flags.
import * as fs from "node:fs"
import * as path from "node:path"

export interface ServiceLaunch {
  /** Environment variables set for the node process (e.g. glibc's MALLOC_ARENA_MAX). */
  readonly env: Readonly<Record<string, string>>
  /** node's own flags, before dist/main.js. */
  readonly nodeFlags: ReadonlyArray<string>
}

const START = /^((?:[A-Z_]+=\S+ )*)exec node ((?:--[\w-]+(?:=\S+)? )*)dist\/main\.js$/

export const parseStartScript = (start: string): ServiceLaunch => {
  const match = START.exec(start)
  if (match === null) throw new Error(`package.json "start" is not \`[NAME=value ...] exec node [--flag ...] dist/main.js\`: ${start}`)
  const words = (text: string) => text.split(" ").filter((word) => word !== "")
  return {
    env: Object.fromEntries(words(match[1]!).map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)])),
    nodeFlags: words(match[2]!)
  }
}

/** The launch of the service in the repository (or copy of it) at `root`. */
export const serviceLaunch = (root: string): ServiceLaunch => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: { start: string } }
  return parseStartScript(pkg.scripts.start)
}
