// The Chromium renderer (renderer: 'chromium'): CSS Takumi does not draw comes out right; a page
// reaches nothing on the network (a local server sees no request, whatever the template tries); a
// template that spins is cut off at the render's bound and recorded on the screen; the browser
// ends with the app; and Chromium asked for where it is not installed is a 422 with its code,
// which GET /api/screens/renderers tells a client beforehand.
// The tests that need Chromium skip without it, except under CI (test/helpers/browser.ts).
import { readFileSync, readdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import sharp from 'sharp'
import t from 'tap'
import { createChromiumRenderer } from '../../src/screens/chromium.js'
import { createRenderPool } from '../../src/screens/render-pool.js'
import { createScreenRenderer } from '../../src/screens/renderers.js'
import { startApp } from '../helpers/app.js'
import { browserMissing } from '../helpers/browser.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { appFetch } from '../helpers/app-fetch.js'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const missing = browserMissing()

function renderers(timeoutMs = 5000) {
  return createScreenRenderer(
    createRenderPool({ threads: 1, timeoutMs, memoryMb: 128 }),
    createChromiumRenderer({ path: CHROMIUM, pages: 2, timeoutMs, memoryMb: 128 }),
  )
}

const job = (template: string, css?: string, width = 200, height = 100) => ({
  template,
  ...(css ? { css } : {}),
  variables: {},
  data: null,
  now: new Date().toISOString(),
  timeZone: 'UTC',
  width,
  height,
})

/** The gray level (0 black, 255 white) of each pixel, row by row. */
async function grays(png: Buffer) {
  const { data, info } = await sharp(png).greyscale().raw().toBuffer({ resolveWithObject: true })
  return { at: (x: number, y: number) => data[y * info.width + x]!, width: info.width, height: info.height }
}

// A black square drawn by a ::before pseudo-element, and a grid placing a box in its second column and row.
const PSEUDO = '<div class="box"></div>'
const PSEUDO_CSS = ".box::before{content:'';display:block;width:60px;height:60px;background:#000}"
const GRID = '<div class="g"><div class="cell"></div></div>'
const GRID_CSS =
  '.g{display:grid;grid-template-columns:100px 100px;grid-template-rows:50px 50px;width:200px;height:100px}.cell{grid-column:2;grid-row:2;background:#000}'

t.test('CSS Takumi leaves out (a ::before pseudo-element) is drawn by Chromium, at the frame size', { skip: missing }, async (t) => {
  const r = renderers()
  t.teardown(() => r.close())
  const takumi = await r.render(job(PSEUDO, PSEUDO_CSS))
  const chromium = await r.render({ ...job(PSEUDO, PSEUDO_CSS), renderer: 'chromium' })
  if (!takumi.ok || !chromium.ok) throw new Error(`render failed: ${JSON.stringify([takumi, chromium].filter((x) => !x.ok))}`)
  const tk = await grays(takumi.png)
  const cr = await grays(chromium.png)
  t.equal(tk.at(30, 30), 255, 'Takumi draws no ::before (the reason to ask for Chromium)')
  t.match(cr, { width: 200, height: 100 }, "Chromium's PNG is the frame's size")
  t.equal(cr.at(30, 30), 0, 'the pseudo-element is black in Chromium')
  t.equal(cr.at(59, 59), 0)
  t.equal(cr.at(61, 30), 255, 'and 60 px wide')
  t.equal(cr.at(30, 61), 255, 'and 60 px high')
  t.equal(cr.at(150, 80), 255, 'the rest of the page is white')

  // The grid as well: the box in the second column of the second row, nothing in the first.
  const grid = await r.render({ ...job(GRID, GRID_CSS), renderer: 'chromium' })
  if (!grid.ok) throw new Error(grid.message)
  const g = await grays(grid.png)
  t.equal(g.at(150, 75), 0, 'second column, second row: the box')
  t.equal(g.at(50, 25), 255, 'first column, first row: empty')
  t.equal(g.at(150, 25), 255, 'second column, first row: empty')

  // Several at once (more than the two pages allowed): each render draws its own template, none another's page.
  const at = [10, 60, 110, 160]
  const many = await Promise.all(
    at.map((x) =>
      r.render({
        ...job(`<div style="position:absolute;left:${x}px;top:0;width:30px;height:100px;background:#000"></div>`),
        renderer: 'chromium',
      }),
    ),
  )
  for (const [i, out] of many.entries()) {
    if (!out.ok) throw new Error(out.message)
    const px = await grays(out.png)
    t.same(
      at.map((x) => px.at(x + 15, 50)),
      at.map((_, j) => (j === i ? 0 : 255)),
      `render ${i} shows its own bar only`,
    )
  }
})

t.test('a template reaches nothing on the network: a local server sees no request', { skip: missing }, async (t) => {
  const seen: string[] = []
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`)
    res.end('secret')
  })
  // Connections too: a preconnect would open one without sending a request.
  let connections = 0
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  server.on('upgrade', (req, socket) => {
    seen.push(`upgrade ${req.url}`)
    socket.destroy()
  })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  // The server answers a request that is made (so its silence below means none was).
  t.equal(await (await appFetch(`${base}/check`)).text(), 'secret')
  seen.length = 0
  connections = 0

  const template = `
    <link rel="preconnect" href="${base}">
    <link rel="dns-prefetch" href="${base}">
    <link rel="prefetch" href="${base}/prefetch">
    <img src="${base}/img">
    <link rel="stylesheet" href="${base}/css">
    <iframe src="${base}/frame"></iframe>
    <object data="${base}/object"></object>
    <div style="width:10px;height:10px;background:url('${base}/background')"></div>
    <script src="${base}/script.js"></script>
    <script>
      appFetch('${base}/fetch').catch(() => {});
      try { const x = new XMLHttpRequest(); x.open('GET', '${base}/xhr'); x.send() } catch {}
      try { navigator.sendBeacon('${base}/beacon', 'x') } catch {}
      try { new WebSocket('${base.replace('http', 'ws')}/ws') } catch {}
      try { new EventSource('${base}/events') } catch {}
      try { new Image().src = '${base}/image-js' } catch {}
    </script>
    <p>drawn</p>`
  const css = `@import url('${base}/import.css'); @font-face{font-family:X;src:url('${base}/font.woff2')} p{font-family:X}`
  const r = renderers()
  t.teardown(() => r.close())
  const out = await r.render({ ...job(template, css), renderer: 'chromium' })
  t.equal(out.ok, true, 'the page is still drawn')
  // Navigations: Chromium opens a connection to the host before the route refuses the request
  // (the proxy flags stop that). A page that navigated away may leave nothing to capture: then
  // its render fails, as a template's fault.
  for (const away of [
    `<meta http-equiv="refresh" content="0;url=${base}/refresh">`,
    `<script>location.href = '${base}/navigate'</script>`,
    `<script>setTimeout(() => { location.href = '${base}/later' }, 0)</script>`,
    `<script>window.open('${base}/popup')</script>`,
    `<a id="a" href="${base}/link" target="_blank">x</a><script>document.getElementById('a').click()</script>`,
  ]) {
    const res = await r.render({ ...job(away), renderer: 'chromium' })
    t.ok(res.ok || res.code === 'SCREEN_RENDER_FAILED', `${away.slice(0, 40)}…: drawn or failed with its code`)
  }
  // Anything in flight has had time to arrive.
  await new Promise((resolve) => setTimeout(resolve, 1000))
  t.same(seen, [], 'the local server saw no request')
  t.equal(connections, 0, 'nor any connection')
})

t.test('a template that spins is cut off at the bound; the next render is drawn', { skip: missing }, async (t) => {
  const r = renderers(1500)
  t.teardown(() => r.close())
  t.match(await r.render({ ...job('<p>warm</p>'), renderer: 'chromium' }), { ok: true })
  const started = Date.now()
  const spun = await r.render({ ...job('<p>before</p><script>while(true){}</script>'), renderer: 'chromium' })
  t.match(spun, { ok: false, code: 'SCREEN_RENDER_TIMEOUT', message: /1500 ms/ })
  t.ok(Date.now() - started < 6000, `stopped near its bound (${Date.now() - started} ms)`)
  // One spinning after load (the render waits for nothing else) is cut off the same way.
  const late = await r.render({ ...job('<script>onload = () => { while (true) {} }</script>'), renderer: 'chromium' })
  t.match(late, { ok: false, code: 'SCREEN_RENDER_TIMEOUT' })
  t.match(await r.render({ ...job('<p>next</p>'), renderer: 'chromium' }), { ok: true }, 'the browser draws the next one')
})

const RECIPE = {
  'src/settings.yml': 'name: Hello\nstrategy: static\nstatic_data: \'{"greeting": "Hello"}\'\n',
  'src/full.liquid': '<div class="layout"><span class="value value--large">{{ greeting }}</span></div>',
}

/** Chromium processes started by this process (playwright's launch is a direct child). */
function chromiumChildren(): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('chromium')) pids.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

t.test(
  "through the API: the screen's renderer, a spinning template on its record, the browser closed with the app",
  { skip: missing },
  async (t) => {
    // The suite runs several files in one process: browsers another file started are not this app's.
    const before = new Set(chromiumChildren())
    const ours = () => chromiumChildren().filter((pid) => !before.has(pid))
    const svc = await startApp(t, { env: { CHROMIUM_PATH: CHROMIUM, SCREEN_RENDER_TIMEOUT_MS: '2000' } })
    const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('chromium'))
    const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
    t.same(
      (await call('/api/screens/renderers')).body.renderers,
      [
        { name: 'takumi', available: true, reason: null },
        { name: 'chromium', available: true, reason: null },
      ],
      'Chromium is offered where it is installed',
    )
    const created = await call('/api/screens', { body: { name: 'Grid', template: GRID, css: GRID_CSS, renderer: 'chromium' } })
    t.equal(created.status, 201)
    t.match(created.body, { renderer: 'chromium' })
    t.match((await call('/api/screens', { body: { name: 'Default', template: '<p>x</p>' } })).body, { renderer: 'takumi' })
    const recipe = await call('/api/screens/recipes', {
      body: { files: RECIPE, renderer: 'chromium' },
    })
    t.match(recipe, { status: 201, body: { renderer: 'chromium' } }, 'a recipe imported for Chromium')

    const preview = await appFetch(`${svc.url}/api/screens/${created.body.id}/preview`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(preview.status, 200)
    // The 1-bit 800×480 default panel: the grid's box (100..200, 50..100) black after conversion.
    const g = await grays(Buffer.from(await preview.arrayBuffer()))
    t.match(g, { width: 800, height: 480 })
    t.equal(g.at(150, 75), 0, 'the grid cell, drawn by Chromium and converted for the panel')
    t.equal(g.at(50, 25), 255)
    t.ok(ours().length > 0, 'a browser runs for the app')

    const spin = await call(`/api/screens/${created.body.id}`, { method: 'PATCH', body: { template: '<script>while(true){}</script>' } })
    t.equal(spin.status, 200)
    const started = Date.now()
    const [spun, other] = await Promise.all([call(`/api/screens/${created.body.id}/preview`), call('/api/screens')])
    t.equal(other.status, 200, 'the service answers meanwhile')
    t.match(spun, { status: 422, body: { code: 'SCREEN_RENDER_TIMEOUT', message: String } })
    t.ok(Date.now() - started < 10_000)
    t.match((await call(`/api/screens/${created.body.id}`)).body.lastError, { code: 'SCREEN_RENDER_TIMEOUT', message: /Chromium/ })

    await svc.close()
    t.same(ours(), [], 'the browser is gone once the app has closed')
  },
)

t.test('chromium asked for where it is not installed: 422 SCREEN_RENDERER_UNAVAILABLE; a renderer not known: 400', async (t) => {
  const svc = await startApp(t, { env: { CHROMIUM_PATH: '/nonexistent/chromium' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('no-chromium'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const refused = await call('/api/screens', { body: { name: 'x', template: '<p>x</p>', renderer: 'chromium' } })
  t.match(refused, { status: 422, body: { code: 'SCREEN_RENDERER_UNAVAILABLE', message: /\/nonexistent\/chromium/ } })
  // Told before asking: a client offers only what this server draws, with the 422's own words.
  const offered = await call('/api/screens/renderers')
  t.equal(offered.status, 200)
  t.same(offered.body.renderers, [
    { name: 'takumi', available: true, reason: null },
    { name: 'chromium', available: false, reason: refused.body.message.replace(/^renderer: /, '') },
  ])
  t.equal((await jsonCall(svc.url, '/api/screens/renderers')).status, 401, 'signed-in callers only')
  t.equal((await call('/api/screens')).body.screens.length, 0, 'nothing was created')

  const s = (await call('/api/screens', { body: { name: 'x', template: '<p>x</p>' } })).body
  t.match(await call(`/api/screens/${s.id}`, { method: 'PATCH', body: { renderer: 'chromium' } }), {
    status: 422,
    body: { code: 'SCREEN_RENDERER_UNAVAILABLE' },
  })
  t.match(await call('/api/screens/preview', { body: { template: '<p>x</p>', renderer: 'chromium' } }), {
    status: 422,
    body: { code: 'SCREEN_RENDERER_UNAVAILABLE' },
  })
  t.match(
    await call('/api/screens/recipes', {
      body: { files: RECIPE, renderer: 'chromium' },
    }),
    { status: 422, body: { code: 'SCREEN_RENDERER_UNAVAILABLE' } },
  )
  t.match(await call('/api/screens', { body: { name: 'x', template: '<p>x</p>', renderer: 'webkit' } }), {
    status: 400,
    body: { code: 'VALIDATION_ERROR', message: /renderer/ },
  })
  t.equal((await call(`/api/screens/${s.id}`)).body.renderer, 'takumi')
})
