// The module a frame of a profile of dist/main.js belongs to. The bundle is one file: esbuild writes a
// `// dist/…` or `// node_modules/…` comment before each module it holds, so a frame's module is the
// last such comment above its line (profileBreakdown.ts, allocBreakdown.ts). Run those against the
// dist/ that made the profile.
import * as fs from "node:fs"

export interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}

/** Each bundle file's module starts: [line, module], in order. */
const moduleIndex = new Map<string, Array<[number, string]>>()

/** The module of line `line` of the file at `url`; the file itself when it holds no module comments. */
export const moduleOf = (url: string, line: number): string => {
  const file = url.replace(/^file:\/\//, "")
  let index = moduleIndex.get(file)
  if (index === undefined) {
    index = []
    try {
      fs.readFileSync(file, "utf8").split("\n").forEach((text, i) => {
        // `// dist/…`, `// node_modules/…` (or a path through a symlinked node_modules: `// ../../x/node_modules/…`)
        const path = /^\/\/ (dist\/\S+|\S*node_modules\/\S+)$/.exec(text)?.[1]
        if (path !== undefined) index!.push([i, path.slice(path.lastIndexOf("node_modules/") === -1 ? 0 : path.lastIndexOf("node_modules/"))])
      })
    } catch {
      // not a file of ours (node:, wasm)
    }
    moduleIndex.set(file, index)
  }
  let found = file
  for (const [start, name] of index) {
    if (start > line) break
    found = name
  }
  return found
}
