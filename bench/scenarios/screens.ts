// screens: (1) one dashboard (a Liquid template with class-based CSS, 800×480, 1-bit panel)
// rendered and converted for the panel, per screen: ours is the render worker (liquidjs, then
// Takumi) and the display conversion; the peer is what the other self-hosted TRMNL servers do, a
// headless Chromium screenshot of the same HTML (a warm browser and page, playwright-core) and the
// same conversion. Skipped with its reason without /usr/bin/chromium.
// (2) a data change to 1,000 frames showing one screen: the webhook's work, from the new data to
// the last frame's image message committed to the durable downlink (the frames are not
// connected: the outbox holds each message until its frame comes). The peer is the same picture
// sent frame by frame (deliverImage, 32 at once), as a manual send would.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { user } from '../../src/db/schema.js'
import { setDesiredImages } from '../../src/devices/repository.js'
import { device } from '../../src/devices/tables.js'
import { convertForDisplay } from '../../src/images/convert.js'
import { deliverImage } from '../../src/images/delivery.js'
import { DISPLAY_PRESETS } from '../../src/images/profiles.js'
import { findImage, findVariants } from '../../src/images/repository.js'
import { renderHtml, templateScope } from '../../src/screens/render.js'
import { createRenderPool } from '../../src/screens/render-pool.js'
import { alternate, type Context, type Scenario } from '../lib/context.js'
import type { Metric, ScenarioResult } from '../lib/report.js'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const profile = DISPLAY_PRESETS['bw-800x480']

const CSS = `.view{display:flex;flex-direction:column;width:800px;height:480px;padding:24px;box-sizing:border-box;font-family:Inter,sans-serif}
.title{font-size:44px;font-weight:700}
.row{display:flex;justify-content:space-between;border-bottom:2px solid #000;padding:6px 0}
.label{font-size:22px}
.value{font-size:26px;font-weight:700}`
const TEMPLATE = `<div class="view"><div class="title">{{ title }}</div>{% for e in events %}<div class="row"><span class="label">{{ e.name }}</span><span class="value">{{ e.at }}</span></div>{% endfor %}</div>`
const data = (round: number) => ({
  title: `Thursday ${round}`,
  events: Array.from({ length: 8 }, (_, i) => ({ name: `Event ${i} of round ${round}`, at: `${10 + i}:00` })),
})

async function renderBench(ctx: Context, rounds: number): Promise<{ metric: Metric; note: string }> {
  const pool = createRenderPool({ threads: 1, timeoutMs: 10_000, memoryMb: 128 })
  const job = (round: number) => ({
    template: TEMPLATE,
    css: CSS,
    variables: {},
    data: data(round),
    now: new Date().toISOString(),
    timeZone: 'UTC',
    width: profile.width,
    height: profile.height,
  })
  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  try {
    const page = await browser.newPage({ viewport: { width: profile.width, height: profile.height } })
    // Warm both (the worker's fonts, the browser's first layout) before measuring.
    await pool.render(job(0))
    await page.setContent('<p>warm</p>')
    const ours: number[] = []
    const peer: number[] = []
    await alternate(
      rounds,
      async (r) => {
        const t0 = performance.now()
        const out = await pool.render(job(r))
        if (!out.ok) throw new Error(`render failed: ${out.message}`)
        await convertForDisplay(out.png, profile)
        ours.push(performance.now() - t0)
      },
      async (r) => {
        const t0 = performance.now()
        // The same Liquid step (the anchors render Liquid too), then the browser draws the HTML.
        const html = await renderHtml(TEMPLATE, templateScope(job(r)))
        await page.setContent(`<!doctype html><html><head><style>body{margin:0}${CSS}</style></head><body>${html}</body></html>`)
        const png = await page.screenshot({ type: 'png' })
        await convertForDisplay(png, profile)
        peer.push(performance.now() - t0)
      },
    )
    ctx.log(
      `screens: render+convert ours ${ours.map((x) => x.toFixed(0)).join(' ')} ms; chromium ${peer.map((x) => x.toFixed(0)).join(' ')} ms`,
    )
    return {
      metric: { name: 'render + convert ms per screen (peer: Chromium screenshot)', better: 'lower', ours, peer },
      note: 'Render + convert: an 800×480 dashboard (Liquid, 8 rows, class-based CSS) to the 1-bit panel file; ours in the render worker (Takumi), the peer a warm headless Chromium page (setContent + screenshot); both convert with the same code.',
    }
  } finally {
    await browser.close()
    await pool.close()
  }
}

async function fanOutBench(ctx: Context, rounds: number, frames: number): Promise<{ metric: Metric; note: string }> {
  const env: Record<string, string> = {
    DATA_DIR: mkdtempSync(join(ctx.workDir, 'screens-')),
    LOG_LEVEL: 'silent',
    MQTT_PORT: '0',
    HOST: '127.0.0.1',
    SCHEDULE_TICK_MS: '60000',
  }
  const app = await buildApp(loadConfig(env))
  await app.ready()
  const db = app.database.db
  try {
    const userId = randomUUID()
    await db.insert(user).values({ id: userId, name: 'Bench', email: `bench-${userId}@example.test`, emailVerified: true })
    const ids = Array.from({ length: frames }, () => randomUUID())
    for (let i = 0; i < ids.length; i += 500)
      await db
        .insert(device)
        .values(
          ids
            .slice(i, i + 500)
            .map((id, j) => ({ id, name: `Frame ${i + j}`, userId, pinCode: '000000', display: profile, isActive: true })),
        )
    const screens = app.screens
    const created = await screens.create(userId, { name: 'Bench', template: TEMPLATE, css: CSS })
    await screens.pushData(created.id, `Bearer ${created.token}`, data(0))
    const shown = await screens.show(userId, created.id, ids[0]!)
    // Every other frame shows the same picture (as a thousand shows would leave them).
    await setDesiredImages(
      db,
      ids.slice(1).map((id) => ({ id, imageId: shown.imageId })),
      { bumpConfig: false },
    )
    const delivery = { db, link: app.deviceLink, storage: app.storage, baseUrl: 'http://127.0.0.1' }
    const ours: number[] = []
    const peer: number[] = []
    await alternate(
      rounds,
      async (r) => {
        const t0 = performance.now()
        const res = await screens.pushData(created.id, `Bearer ${created.token}`, data(r + 1))
        ours.push(performance.now() - t0)
        if (res.sent !== frames) throw new Error(`sent ${res.sent} of ${frames}`)
      },
      async () => {
        const image = (await findImage(db, shown.imageId))!
        const stored = { image, variants: await findVariants(db, image.id) }
        const t0 = performance.now()
        for (let i = 0; i < ids.length; i += 32)
          await Promise.all(ids.slice(i, i + 32).map((id) => deliverImage(delivery, id, profile, stored, { userId })))
        peer.push(performance.now() - t0)
        // Back to the screen's picture, so the next round's frames show it again.
        const again = await screens.show(userId, created.id, ids[0]!)
        await setDesiredImages(
          db,
          ids.slice(1).map((id) => ({ id, imageId: again.imageId })),
          { bumpConfig: false },
        )
      },
    )
    ctx.log(
      `screens: data change to ${frames} frames ours ${ours.map((x) => x.toFixed(0)).join(' ')} ms; one by one ${peer.map((x) => x.toFixed(0)).join(' ')} ms`,
    )
    return {
      metric: { name: `ms from new data to the last of ${frames} frames' messages (peer: sent one by one)`, better: 'lower', ours, peer },
      note: `Data change: ${frames} frames (same panel) show one screen; the webhook's new data is drawn once, converted once, and sent to every frame in one batch (the durable downlink's outbox; frames not connected). Peer: the same picture sent frame by frame with deliverImage, 32 at once.`,
    }
  } finally {
    await app.close()
  }
}

export const screens: Scenario = {
  name: 'screens',
  summary:
    'a dashboard rendered + converted (Takumi worker vs headless Chromium screenshot); a data change to 1,000 frames showing one screen',
  async run(ctx): Promise<ScenarioResult> {
    const rounds = ctx.quick ? 5 : 20
    const metrics: Metric[] = []
    const notes: string[] = []
    if (existsSync(CHROMIUM)) {
      const r = await renderBench(ctx, rounds)
      metrics.push(r.metric)
      notes.push(r.note)
    } else notes.push(`Render + convert skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH).`)
    const f = await fanOutBench(ctx, ctx.quick ? 2 : 5, 1000)
    metrics.push(f.metric)
    notes.push(f.note)
    return {
      scenario: 'screens',
      ours: 'screens (Takumi worker, one batch)',
      peer: 'headless Chromium; frame-by-frame sends',
      rounds,
      metrics,
      notes,
    }
  },
}
