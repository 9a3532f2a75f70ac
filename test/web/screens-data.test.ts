// The console's data layer for screens (web/src/queries/screens.ts, and adding a screen to a
// playlist) in Node against the real app, with a QueryClient as the Screens page uses it: the
// preview draws the unsaved draft as a PNG at the chosen frame's size without saving it or
// touching the screen's record, a failing template is an error with the service's code and words,
// and each change lands under the keys the page reads. Same style as
// data-layer.test.ts; the browser journey is screens.test.ts.
import sharp from 'sharp'
import t, { type Test } from 'tap'
import { MutationObserver, QueryClient, QueryObserver } from '@tanstack/react-query'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { consoleModules, openPage } from '../helpers/console-page.js'
import { appFetch } from '../helpers/app-fetch.js'

// The console's modules are loaded by path (see console-page.ts): untyped here, typed by `tsc -p web`.
const run = (qc: QueryClient, options: any, variables?: unknown): Promise<any> =>
  new MutationObserver<any, Error, unknown>(qc, options).mutate(variables)
const get = (qc: QueryClient, options: any): Promise<any> => qc.fetchQuery(options)
const stale = (qc: QueryClient, queryKey: readonly unknown[]) => qc.getQueryState(queryKey)?.isInvalidated

function show(t: Test, qc: QueryClient, options: any) {
  const observer = new QueryObserver(qc, { ...options, refetchInterval: false })
  t.teardown(observer.subscribe(() => {}))
  return observer
}

async function until<T>(what: string, read: () => T | undefined | false, ms = 5000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = read()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** A frame of this size and palette switched on for pairing: the code it shows. */
async function frameCode(svc: TestApp, display: { width: number; height: number; palette: string }): Promise<string> {
  const res = await appFetch(`${svc.url}/api/device/init`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ display, model: 'test-frame', firmware: '1.0.0' }),
  })
  return ((await res.json()) as { pinCode: string }).pinCode
}

const size = async (blob: Blob) => {
  const meta = await sharp(Buffer.from(await blob.arrayBuffer())).metadata()
  return { format: meta.format, width: meta.width, height: meta.height }
}

const m = await consoleModules(t)
const { screenKeys, screenMutations, screenQueries, screenVersion } = m.screens
const { playlistKeys, playlistMutations, playlistQueries } = m.playlists
const { deviceMutations } = m.devices
const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })

t.test('screens key their queries under a root of their own, a screen\u2019s under its key', async (t) => {
  const roots = ['devices', 'playlists', 'credits', 'generation', 'notifications', 'account', 'admin', 'organizations', 'screens'].map(
    (d) => (Object.values((m as any)[d]) as any[]).find((v) => Array.isArray(v?.all))?.all[0],
  )
  t.equal(new Set(roots).size, roots.length, `no two domains share a root: ${roots.join(', ')}`)
  t.same(screenQueries.renderers().queryKey.slice(0, 1), screenKeys.all, 'the renderers offered are under screens')
  const one = screenKeys.one('a')
  for (const q of [screenQueries.detail('a'), screenQueries.preview('a', { deviceId: 'd' }, 'v1'), screenQueries.preview('a', {}, 'v1')])
    t.same(q.queryKey.slice(0, one.length), one, `${JSON.stringify(q.queryKey)} is under the screen`)
  const key = (draft: object, version: string) => JSON.stringify(screenQueries.preview('a', draft, version).queryKey)
  t.not(key({ template: 'x' }, 'v1'), key({ template: 'x' }, 'v2'), 'a saved change or new data is a new preview')
  t.not(key({ template: 'x' }, 'v1'), key({ template: 'y' }, 'v1'), 'so is another draft')
  t.not(key({ template: 'x' }, 'v1'), key({ template: 'x', deviceId: 'd' }, 'v1'), 'and another frame')
  const at = '2026-01-01T00:00:00.000Z'
  t.not(screenVersion({ updatedAt: at, dataAt: null }), screenVersion({ updatedAt: at, dataAt: at }), 'so is new data')
})

t.test('a screen: created, its drafts previewed at the frame\u2019s size, broken and fixed, shown, in a playlist, deleted', async (t) => {
  const { client, jar } = makeClient(svc.url)
  await signUp(client, uniqueEmail('dl-screens'))
  openPage(svc, jar)
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })

  const list = show(t, qc, screenQueries.list())
  t.same(await until('the list', () => list.getCurrentResult().data), [], 'no screens yet')
  const created = await run(qc, screenMutations.create(), {
    name: 'Hall',
    template: '<h1>{{ title }}</h1>',
    variables: { title: 'Hello' },
  })
  t.match(created, { id: String, name: 'Hall', token: /^scr_/, lastError: null }, 'the answer carries the webhook token, once')
  const id: string = created.id
  await until('the list to be read again', () => (list.getCurrentResult().data as unknown[] | undefined)?.length === 1)
  t.notOk('token' in (await get(qc, screenQueries.detail(id))), 'the screen read again has no token')

  const paired = await run(qc, deviceMutations.pair(), {
    pinCode: await frameCode(svc, { width: 400, height: 300, palette: 'bw' }),
    name: 'Small',
    color: '#000000',
  })
  const deviceId: string = paired.device.id
  const detail = qc.getQueryData<any>(screenKeys.detail(id))
  const version = screenVersion(detail)
  const png = await get(qc, screenQueries.preview(id, { deviceId }, version))
  t.equal(png.type, 'image/png')
  t.same(await size(png), { format: 'png', width: 400, height: 300 }, 'the preview is at the frame\u2019s size')
  t.same(
    await size(await get(qc, screenQueries.preview(id, {}, version))),
    { format: 'png', width: 800, height: 480 },
    'without a frame, the default panel',
  )

  // A draft is drawn, not saved: another picture, the same screen.
  const bytes = async (blob: Blob) => Buffer.from(await blob.arrayBuffer())
  const drafted = await get(
    qc,
    screenQueries.preview(id, { template: '<h1>{{ title }}, draft</h1>', variables: { title: 'Bye' }, deviceId }, version),
  )
  t.same(await size(drafted), { format: 'png', width: 400, height: 300 })
  t.notOk((await bytes(drafted)).equals(await bytes(png)), 'the draft\u2019s picture, not the saved one')
  const unchanged = await get(qc, { ...screenQueries.detail(id), staleTime: 0 })
  t.same(unchanged, detail, 'the screen is not saved by previewing a draft')

  // A draft that does not parse: the service's code and words, and nothing on the screen's record.
  const refused = await get(qc, screenQueries.preview(id, { template: '{% if %}', deviceId }, version)).catch((e: unknown) => e)
  t.match(
    refused,
    { status: 422, code: 'SCREEN_TEMPLATE_INVALID', message: String },
    'a failing template: the service\u2019s code and words',
  )
  t.notMatch(m.api.errorText(refused), /[{}]/, `said in words: "${m.api.errorText(refused)}"`)
  t.match(
    await get(qc, { ...screenQueries.detail(id), staleTime: 0 }),
    { lastError: null },
    'a draft\u2019s failure is not the screen\u2019s',
  )

  // Saved: the answer is shown as it is, a new version, so the preview is drawn again.
  const saved = await run(qc, screenMutations.patch(id), { template: '<h1>{{ title }}!</h1>' })
  t.same(qc.getQueryData(screenKeys.detail(id)), saved, 'the saved screen is shown, not read again')
  t.not(saved.updatedAt, detail.updatedAt)
  t.not(screenVersion(saved), version)
  await until('the list to be read again', () => !stale(qc, screenKeys.list()) && list.getCurrentResult().isSuccess)
  t.same(await size(await get(qc, screenQueries.preview(id, { deviceId }, screenVersion(saved)))), {
    format: 'png',
    width: 400,
    height: 300,
  })

  await get(qc, screenQueries.detail(id))
  const shown = await run(qc, screenMutations.show(id), deviceId)
  t.match(shown, { deviceId, imageId: String, sha256: String })
  t.ok(stale(qc, screenKeys.detail(id)), 'shown: the screen (its lastError) is read again')
  const refusedShow = await run(qc, screenMutations.show(id), '00000000-0000-4000-8000-000000000000').catch((e: unknown) => e)
  t.match(refusedShow, { status: 404, message: String }, 'an unknown frame is refused in words')

  const playlist = await run(qc, playlistMutations.create(), { name: 'Hallway', mode: 'sequential', itemSeconds: 3600 })
  await get(qc, playlistQueries.list())
  const withScreen = await run(qc, playlistMutations.addScreen(), { playlistId: playlist.id, screenId: id })
  t.match(withScreen.items, [{ kind: 'screen', screenId: id }], 'the screen is an item of the playlist')
  t.same(qc.getQueryData(playlistKeys.detail(playlist.id)), withScreen, 'the playlist answered is shown')
  t.ok(stale(qc, playlistKeys.list()), 'and the list (its counts) is read again')

  const inUse = await run(qc, screenMutations.remove(id)).catch((e: unknown) => e)
  t.match(inUse, { status: 409, code: 'SCREEN_IN_USE', message: /playlist/ }, 'a screen in a playlist is not deleted, and says why')
  t.ok(qc.getQueryData(screenKeys.detail(id)), 'and is still shown')
  await run(qc, playlistMutations.removeItem(playlist.id), withScreen.items[0].id)

  const rotated = await run(qc, screenMutations.rotateToken(id))
  t.match(rotated, /^scr_/)
  const push = (token: string) =>
    appFetch(`${svc.url}/api/screens/${id}/data`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"title":"pushed"}',
    })
  t.equal((await push(created.token)).status, 401, 'the old token stops working')
  t.equal((await push(rotated)).status, 200, 'the new one works')

  await run(qc, screenMutations.remove(id))
  t.equal(qc.getQueryData(screenKeys.detail(id)), undefined, 'its cached queries are dropped')
  t.same(qc.getQueryData(screenKeys.list()), [], 'the list is read again before deleting answers (the page then leaves)')
})

t.test('the renderers offered: Chromium unavailable, in the words a save or preview is refused with', async (t) => {
  const bare = await startApp(t, { env: { CHROMIUM_PATH: '/nonexistent/chromium' } })
  const { client, jar } = makeClient(bare.url)
  await signUp(client, uniqueEmail('dl-renderers'))
  openPage(bare, jar)
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  const offered = await get(qc, screenQueries.renderers())
  t.match(offered, [
    { name: 'takumi', available: true, reason: null },
    { name: 'chromium', available: false, reason: /\/nonexistent\/chromium/ },
  ])
  const id = (await run(qc, screenMutations.create(), { name: 'Plain', template: '<p>x</p>' })).id
  const refused = await get(qc, screenQueries.preview(id, { renderer: 'chromium' }, 'v1')).catch((e: unknown) => e)
  t.match(refused, { status: 422, code: 'SCREEN_RENDERER_UNAVAILABLE' })
  t.equal(refused.message, `renderer: ${offered[1].reason}`, 'the same words either way')
  const notSaved = await run(qc, screenMutations.patch(id), { renderer: 'chromium' }).catch((e: unknown) => e)
  t.match(notSaved, { status: 422, code: 'SCREEN_RENDERER_UNAVAILABLE', message: refused.message })

  openPage(bare)
  const signedOut = await get(new QueryClient(), { ...screenQueries.renderers(), retry: false }).catch((e: unknown) => e)
  t.match(signedOut, { status: 401 }, 'signed out: refused, with its status for the session gate')
})

t.test('creating is refused in the service\u2019s words', async (t) => {
  const { client, jar } = makeClient(svc.url)
  await signUp(client, uniqueEmail('dl-screens-bad'))
  openPage(svc, jar)
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  const noSource = await run(qc, screenMutations.create(), { name: 'Weather', builtin: 'weather' }).catch((e: unknown) => e)
  t.match(noSource, { status: 400, code: 'VALIDATION_ERROR', message: /source/ })
  const clock = await run(qc, screenMutations.create(), { name: 'Clock', builtin: 'clock', variables: { hour12: false } })
  t.match(clock, { builtin: 'clock', template: null, token: /^scr_/ })
})
