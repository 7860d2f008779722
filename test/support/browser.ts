// Headless Chromium for the dashboard's browser tests: Debian's /usr/bin/chromium driven by
// playwright-core (no browser download), with the flags that work on this machine's closed network,
// a context that accepts the service's self-signed certificate, and screenshots written under
// .tmp/screenshots/ (git-ignored) for a person to look at. `layout` photographs a page at a laptop's
// 1,280 px and a phone's 420 px and fails when the page is wider than the screen.
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

/** The widths every page is photographed and checked at: a common laptop, and a phone. */
export const WIDTHS = [1280, 420] as const
const HEIGHT = 900

/** A browser, a context (1280×900, certificate errors ignored) and a page; closed with the scope. */
export const browserSession = Effect.acquireRelease(
  Effect.promise(async (): Promise<BrowserSession> => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS })
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: WIDTHS[0], height: HEIGHT } })
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

/** Two animation frames: the layout, and what resize observers (the charts) changed, are done. */
const settled = (page: Page) =>
  page.evaluate("new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(undefined))))")

/**
 * How far the page is wider than the screen (0 when it fits), and the elements sticking out that no
 * scrolling container of theirs holds (a wide table scrolling inside its card is fine). Run in the
 * page, so written as the page's own script.
 */
export const horizontalOverflow = (page: Page): Promise<{ readonly excess: number; readonly culprits: ReadonlyArray<string> }> =>
  page.evaluate(`(() => {
    const width = document.documentElement.clientWidth
    const scrolls = (element) => ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(element).overflowX)
    const culprits = []
    for (const element of document.body.querySelectorAll("*")) {
      const box = element.getBoundingClientRect()
      if (box.width === 0 || box.right <= width + 0.5) continue
      let holder = element.parentElement
      while (holder !== null && holder !== document.body && !scrolls(holder)) holder = holder.parentElement
      if (holder !== null && holder !== document.body) continue
      const classes = element.classList.length === 0 ? "" : "." + [...element.classList].join(".")
      culprits.push(element.tagName.toLowerCase() + (element.id === "" ? "" : "#" + element.id) + classes + " (right edge " + Math.round(box.right) + " px)")
      if (culprits.length === 5) break
    }
    return { excess: document.documentElement.scrollWidth - width, culprits }
  })()`)

/** The page at every width of WIDTHS: photographed as <name>-<width>.png, failing when it is wider than the screen. */
export const layout = (page: Page, name: string) =>
  step(async () => {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: HEIGHT })
      await settled(page)
      fs.mkdirSync(SCREENSHOTS, { recursive: true })
      await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true })
      const overflow = await horizontalOverflow(page)
      if (overflow.excess > 0 || overflow.culprits.length > 0) {
        throw new Error(`${name} at ${width} px is ${overflow.excess} px wider than the screen: ${overflow.culprits.join(", ")}`)
      }
    }
    await page.setViewportSize({ width: WIDTHS[0], height: HEIGHT })
    await settled(page)
  })
