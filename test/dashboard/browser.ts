// Headless Chromium for the dashboard's browser tests: Debian's /usr/bin/chromium driven by
// playwright-core (no browser download), with the flags that work on this machine's closed network,
// a context that accepts the service's self-signed certificate, and screenshots written under
// .tmp/screenshots/ (git-ignored) for a person to look at.
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"
export const SCREENSHOTS = path.resolve(import.meta.dirname, "..", "..", ".tmp", "screenshots")

const FLAGS = [
  "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"
]

export interface BrowserSession {
  readonly browser: Browser
  readonly context: BrowserContext
  readonly page: Page
}

/** The page of the current session: photographed as failure.png when a step fails. */
let current: Page | undefined

/** A browser, a context (1440×900, certificate errors ignored) and a page; closed with the scope. */
export const browserSession = Effect.acquireRelease(
  Effect.promise(async (): Promise<BrowserSession> => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS })
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1440, height: 900 } })
    const page = await context.newPage()
    page.setDefaultTimeout(15_000)
    current = page
    return { browser, context, page }
  }),
  ({ browser }) => Effect.promise(() => browser.close())
)

/** Saves a full-page screenshot as .tmp/screenshots/<name>.png. */
export const screenshot = (page: Page, name: string) =>
  Effect.promise(async () => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true })
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
  })

/** Runs a step of the page (a promise) as an effect; a failing step leaves .tmp/screenshots/failure.png. */
export const step = <A>(run: () => Promise<A>) =>
  Effect.promise(async () => {
    try {
      return await run()
    } catch (error) {
      fs.mkdirSync(SCREENSHOTS, { recursive: true })
      await current?.screenshot({ path: path.join(SCREENSHOTS, "failure.png"), fullPage: true }).catch(() => undefined)
      throw error
    }
  })
