// Imported first by the entry points (main.ts, cli/main.ts): stops at once with one line on a Node
// older than the packages need (undici and @effect/platform-node: 22.19), which would otherwise fail
// with an obscure error while they load. A production start runs whichever node is on PATH.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(`timewheel: needs Node.js 22.19 or later (24 recommended), this is ${process.version}\n`)
  process.exit(1)
}
