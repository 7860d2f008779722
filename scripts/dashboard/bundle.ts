// Bundles the dashboard's pages (web/: preact + htm + uPlot) into dist/web/ with esbuild: one
// minified ES module and one stylesheet with content-hashed names under assets/, and index.html
// naming them. Called by scripts/build.ts (npm run build, npm start) whenever it compiles; run by
// hand with `npm exec -- node scripts/dashboard/bundle.ts` (prints the sizes).
import * as fs from "node:fs"
import * as path from "node:path"
import * as zlib from "node:zlib"

const root = path.resolve(import.meta.dirname, "..", "..")
export const WEB_DIR = path.join(root, "web")
const OUT_DIR = path.join(root, "dist", "web")

export interface BundleSizes {
  readonly js: { readonly bytes: number; readonly gzip: number }
  readonly css: { readonly bytes: number; readonly gzip: number }
}

export const bundleDashboard = async (): Promise<BundleSizes> => {
  const esbuild = await import("esbuild")
  fs.rmSync(OUT_DIR, { recursive: true, force: true })
  const result = await esbuild.build({
    entryPoints: [path.join(WEB_DIR, "main.ts")],
    bundle: true,
    minify: true,
    format: "esm",
    target: ["es2022"],
    outdir: path.join(OUT_DIR, "assets"),
    entryNames: "[name]-[hash]",
    metafile: true,
    legalComments: "none",
    logLevel: "error"
  })
  const outputs = Object.keys(result.metafile.outputs).map((file) => path.resolve(root, file))
  const js = outputs.find((file) => file.endsWith(".js"))!
  const css = outputs.find((file) => file.endsWith(".css"))!
  const template = fs.readFileSync(path.join(WEB_DIR, "index.html"), "utf8")
  fs.writeFileSync(path.join(OUT_DIR, "index.html"), template.replace("{{js}}", path.basename(js)).replace("{{css}}", path.basename(css)))
  const size = (file: string) => {
    const bytes = fs.readFileSync(file)
    return { bytes: bytes.length, gzip: zlib.gzipSync(bytes).length }
  }
  return { js: size(js), css: size(css) }
}

if (import.meta.main) {
  const sizes = await bundleDashboard()
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`
  console.log(`dist/web: js ${kb(sizes.js.bytes)} (gzip ${kb(sizes.js.gzip)}), css ${kb(sizes.css.bytes)} (gzip ${kb(sizes.css.gzip)})`)
}
