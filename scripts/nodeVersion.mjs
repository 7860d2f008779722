// Loaded first (`node --import ./scripts/nodeVersion.mjs scripts/build.ts`) by the npm scripts that
// build and start the service: on a Node older than 22.19 (a production install whose host node is
// too old: the Node 24 of the dev dependencies is pruned) it stops with one line saying so, instead
// of Node's ERR_UNKNOWN_FILE_EXTENSION for scripts/build.ts. Plain JavaScript, so any Node runs it.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `timewheel: needs Node.js 22.19 or later (24 recommended), this is ${process.version}. ` +
      "`npm install` fetches Node 24 for development; a production install runs the host's node " +
      "(docs/operations.md, \"Production install\")\n"
  )
  process.exit(1)
}
