// screens: (1) one dashboard (a Liquid template with class-based CSS, 800×480, 1-bit panel)
// rendered and converted for the panel, per screen: ours is the render worker (liquidjs, then
// Takumi) and the display conversion; the peer is what the other self-hosted TRMNL servers do, a
// headless Chromium screenshot of the same HTML (a warm browser and page, playwright-core) and the
// same conversion; and our own renderer 'chromium' (a context per render, no network) against the
// same screenshot. Skipped with its reason without /usr/bin/chromium.
// (2) a data change to 1,000 frames showing one screen: 1,000 MQTT frames connected to the
// in-process broker (raw MQTT devices in a fleet process), timed from the webhook's new data until
// the last frame has received its image message. The peer is the same picture sent frame by
// frame (deliverImage, 32 at once), as a manual send would.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { user } from '../../src/db/schema.js'
import { setDesiredImages } from '../../src/devices/repository.js'
import { device } from '../../src/devices/tables.js'
import { sha256 } from '../../src/devices/codes.js'
import { convertForDisplay } from '../../src/images/convert.js'
import { deliverImage } from '../../src/images/delivery.js'
import { DISPLAY_PRESETS } from '../../src/images/profiles.js'
import { findImage, findVariants } from '../../src/images/repository.js'
import { renderHtml, templateScope } from '../../src/screens/render.js'
import { createChromiumRenderer } from '../../src/screens/chromium.js'
import { createRenderPool } from '../../src/screens/render-pool.js'
import { createScreenRenderer } from '../../src/screens/renderers.js'
import { topicFor } from '../../src/mqtt/contract.js'
import { alternate, type Context, type Scenario } from '../lib/context.js'
import { type Fleet, startFleet } from '../lib/fleet.js'
import { makeCreds } from '../lib/ours.js'
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

async function renderBench(ctx: Context, rounds: number): Promise<{ metrics: Metric[]; notes: string[] }> {
  const pool = createRenderPool({ threads: 1, timeoutMs: 10_000, memoryMb: 128 })
  // Our Chromium path as a screen with renderer 'chromium' takes it: Liquid in a worker, a fresh context per render, no network.
  const ourChromium = createScreenRenderer(
    createRenderPool({ threads: 1, timeoutMs: 10_000, memoryMb: 128 }),
    createChromiumRenderer({ path: CHROMIUM, pages: 1, timeoutMs: 10_000, memoryMb: 128 }),
  )
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
    const warmed = await ourChromium.render({ ...job(0), renderer: 'chromium' })
    if (!warmed.ok) throw new Error(`our Chromium renderer failed: ${warmed.message}`)
    /** What the other self-hosted servers do: the same Liquid step, then a warm page's screenshot of the HTML. */
    const anchor = async (r: number) => {
      const t0 = performance.now()
      const html = await renderHtml(TEMPLATE, templateScope(job(r)))
      await page.setContent(`<!doctype html><html><head><style>body{margin:0}${CSS}</style></head><body>${html}</body></html>`)
      const png = await page.screenshot({ type: 'png' })
      await convertForDisplay(png, profile)
      return performance.now() - t0
    }
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
      async (r) => void peer.push(await anchor(r)),
    )
    const chromiumOurs: number[] = []
    const chromiumPeer: number[] = []
    await alternate(
      rounds,
      async (r) => {
        const t0 = performance.now()
        const out = await ourChromium.render({ ...job(r), renderer: 'chromium' })
        if (!out.ok) throw new Error(`render failed: ${out.message}`)
        await convertForDisplay(out.png, profile)
        chromiumOurs.push(performance.now() - t0)
      },
      async (r) => void chromiumPeer.push(await anchor(r)),
    )
    const ms = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ')
    ctx.log(`screens: render+convert ours ${ms(ours)} ms; chromium ${ms(peer)} ms`)
    ctx.log(`screens: our Chromium renderer ${ms(chromiumOurs)} ms; chromium warm page ${ms(chromiumPeer)} ms`)
    return {
      metrics: [
        { name: 'render + convert ms per screen (peer: Chromium screenshot)', better: 'lower', ours, peer },
        {
          name: "render + convert ms per screen, our renderer 'chromium' (peer: Chromium screenshot of a warm page)",
          better: 'lower',
          ours: chromiumOurs,
          peer: chromiumPeer,
        },
      ],
      notes: [
        'Render + convert: an 800×480 dashboard (Liquid, 8 rows, class-based CSS) to the 1-bit panel file; ours in the render worker (Takumi), the peer a warm headless Chromium page (setContent + screenshot); both convert with the same code.',
        "Our renderer 'chromium' (for templates that need full CSS): Liquid in the render worker, then a fresh browser context per render with every request blocked, fonts from memory; against the same warm-page screenshot, to show what the isolation costs.",
      ],
    }
  } finally {
    await browser.close()
    await pool.close()
    await ourChromium.close()
  }
}

async function fanOutBench(ctx: Context, rounds: number, frames: number): Promise<{ metric: Metric; note: string }> {
  const env: Record<string, string> = {
    DATA_DIR: mkdtempSync(join(ctx.workDir, 'screens-')),
    LOG_LEVEL: 'silent',
    MQTT_PORT: '0',
    HOST: '127.0.0.1',
    SCHEDULE_TICK_MS: '60000',
    // The per-address connection-rate limit would refuse 1,000 frames connecting from one machine.
    MQTT_CONNECT_RATE: '0',
  }
  const app = await buildApp(loadConfig(env))
  await app.ready()
  const db = app.database.db
  let fleet: Fleet | undefined
  try {
    const userId = randomUUID()
    await db.insert(user).values({ id: userId, name: 'Bench', email: `bench-${userId}@example.test`, emailVerified: true })
    // Devices with secrets as pairing stores them (a SHA-256 hash), so the fleet can connect as them.
    const creds = makeCreds(frames)
    const ids = creds.map((c) => c.id)
    for (let i = 0; i < creds.length; i += 500)
      await db.insert(device).values(
        creds.slice(i, i + 500).map((c, j) => ({
          id: c.id,
          name: `Frame ${i + j}`,
          userId,
          pinCode: '000000',
          display: profile,
          isActive: true,
          secretHash: sha256(c.secret),
          secretIssuedAt: new Date(),
        })),
      )
    // The frames: raw MQTT devices in a process of their own, persistent sessions, QoS 1 on their image topic.
    fleet = await startFleet()
    const port = app.mqttPort
    if (port === undefined) throw new Error('the broker is not listening')
    ctx.log(`screens: connecting ${frames} MQTT frames`)
    const co = await fleet.connect({ port, creds, clean: false, subscribe: [topicFor('{id}', 'image')], concurrency: 100 })
    if (co.failed) throw new Error(`screens: ${co.failed} of ${frames} frames did not connect: ${JSON.stringify(co.codes)}`)
    const screens = app.screens
    const created = await screens.create(userId, { name: 'Bench', template: TEMPLATE, css: CSS })
    await screens.pushData(created.id, `Bearer ${created.token}`, data(0))
    const f = fleet
    /** Frame 0 shown the screen (so it follows it), its message received before the next measurement starts. */
    const showAgain = async () => {
      await f.expect(1)
      const again = await screens.show(userId, created.id, ids[0]!)
      if ((await f.wait(30_000)).received < 1) throw new Error('frame 0 did not get the screen')
      // Every other frame shows the same picture (as a thousand shows would leave them).
      await setDesiredImages(
        db,
        ids.slice(1).map((id) => ({ id, imageId: again.imageId })),
        { bumpConfig: false },
      )
      return again
    }
    const shown = await showAgain()
    const delivery = { db, link: app.deviceLink, storage: app.storage, baseUrl: 'http://127.0.0.1' }
    /** From `t0` (epoch ms, as the fleet's clock) to the last frame's message received. */
    const untilAll = async (t0: number) => {
      const w = await f.wait(120_000)
      if (w.received < frames) throw new Error(`only ${w.received} of ${frames} frames received the picture`)
      return w.lastAt - t0
    }
    const epochNow = () => performance.timeOrigin + performance.now()
    const ours: number[] = []
    const peer: number[] = []
    const answered: number[] = []
    await alternate(
      rounds,
      async (r) => {
        await f.expect(frames)
        const t0 = epochNow()
        const res = await screens.pushData(created.id, `Bearer ${created.token}`, data(r + 1))
        answered.push(epochNow() - t0)
        if (res.sent !== frames) throw new Error(`sent ${res.sent} of ${frames}`)
        ours.push(await untilAll(t0))
      },
      async () => {
        const image = (await findImage(db, shown.imageId))!
        const stored = { image, variants: await findVariants(db, image.id) }
        await f.expect(frames)
        const t0 = epochNow()
        for (let i = 0; i < ids.length; i += 32)
          await Promise.all(ids.slice(i, i + 32).map((id) => deliverImage(delivery, id, profile, stored, { userId })))
        peer.push(await untilAll(t0))
        // Back to the screen's picture, so the next round's frames show it again.
        await showAgain()
      },
    )
    ctx.log(
      `screens: data change to ${frames} connected frames, until the last has it: ours ${ours.map((x) => x.toFixed(0)).join(' ')} ms (the webhook answered after ${answered.map((x) => x.toFixed(0)).join(' ')} ms); one by one ${peer.map((x) => x.toFixed(0)).join(' ')} ms`,
    )
    return {
      metric: {
        name: `ms from new data until the last of ${frames} connected MQTT frames has the picture (peer: sent one by one)`,
        better: 'lower',
        ours,
        peer,
      },
      note: `Data change: ${frames} MQTT frames (raw MQTT devices in a separate process, persistent sessions, QoS 1 on devices/{id}/image, connected to the in-process broker) show one screen; timed from the webhook's new data until the last frame has received its image message. Ours: drawn once, converted once, sent in one batch through the durable downlink (the webhook answered after a median ${median(answered).toFixed(0)} ms). Peer: the same picture sent frame by frame with deliverImage, 32 at once.`,
    }
  } finally {
    await fleet?.stop()
    await app.close()
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN

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
      metrics.push(...r.metrics)
      notes.push(...r.notes)
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
