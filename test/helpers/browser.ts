// A real browser for the console's tests: Debian's Chromium driven by playwright-core. Without
// Chromium the browser tests skip with the reason; under CI they fail instead (.ci/run installs it).
// The screens renderer's own base flags (without them Chromium keeps trying the closed network);
// not its proxy, since the console's pages are on loopback.
import { CHROMIUM_BASE_FLAGS } from '../../src/screens/chromium.js'
import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { ensureConsoleBuilt } from '../../src/web/build.js'

type Tap = { teardown(fn: () => unknown): void }

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Why browser tests cannot run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  if (existsSync(chromiumPath)) return undefined
  const why = `Chromium is not installed at ${chromiumPath} (apt-get install -y chromium, or set CHROMIUM_PATH)`
  if (process.env.CI) throw new Error(`${why}: CI must run the browser tests`)
  return why
}

export async function launchBrowser(t: Tap): Promise<Browser> {
  await ensureConsoleBuilt()
  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_BASE_FLAGS })
  t.teardown(() => browser.close())
  return browser
}

export const PHONE = { width: 375, height: 812 }
export const DESKTOP = { width: 1280, height: 800 }

/** A fresh context (its own cookies), phone-sized unless told. */
export async function newPage(browser: Browser, viewport = PHONE): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 })
  const page = await context.newPage()
  return { context, page }
}

const screenshotDir = fileURLToPath(new URL('../../.tap/screenshots/', import.meta.url))

/** Saves the page as .tap/screenshots/NAME.png (kept by the run, for people to look at). */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(screenshotDir, { recursive: true })
  const path = join(screenshotDir, `${name}.png`)
  await page.screenshot({ path, fullPage: true })
  return path
}

const axeSource = fileURLToPath(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url))

/** axe-core's serious and critical findings on the page as it is now ("rule: target" each). */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated over the DevTools protocol, which the page's Content-Security-Policy does not apply to
  // (a script tag would be refused, as it should be).
  await page.evaluate(await readFile(axeSource, 'utf8'))
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(ctx: Document): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> }
      }
    ).axe
    const result = await axe.run(document)
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${n.target.join(' ')}`))
  })
}
