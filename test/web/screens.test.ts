// The Screens page in a real browser (Chromium through playwright-core) against the real app:
// a screen created from a template, its webhook token shown once (copied, and working), the
// editor's preview drawn at the chosen frame's size, drafts previewed as typed but saved only
// with Save (a broken one said in words and fixed by typing; leaving with unsaved changes asks
// first; switched to Chromium, previewed by it, saved), shown on the frame, added to a playlist,
// and deleted (refused while in the playlist); then a TRMNL recipe imported from its files for
// Chromium and previewed. On a server without Chromium the choice is offered disabled with the
// reason, and the 422 is said in words when that list is not at hand.
// axe-core checks each screen; screenshots go to .tap/screenshots/.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import type { Page, Request } from 'playwright-core'
import { startApp } from '../helpers/app.js'
import { accessibilityProblems, browserMissing, DESKTOP, launchBrowser, newPage, PHONE, screenshot } from '../helpers/browser.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { appFetch } from '../helpers/app-fetch.js'

const PASSWORD = 'correct-horse-battery'
const skip = browserMissing()

async function checkScreen(t: Test, page: Page, name: string) {
  t.same(await accessibilityProblems(page), [], `${name}: no serious or critical axe-core finding`)
  await screenshot(page, name)
}

async function signIn(page: Page, url: string, email: string) {
  await page.goto(`${url}/signin`)
  await page.getByLabel('E-mail').fill(email)
  await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Your devices' }).waitFor()
}

/** The size of the preview image once it has loaded (0×0 until then). */
const previewSize = (page: Page) =>
  page.locator('img.preview').evaluate((img: HTMLImageElement) => ({
    complete: img.complete,
    width: img.naturalWidth,
    height: img.naturalHeight,
    src: img.src,
  }))

t.test('in Chromium: a screen from a template, previewed, shown, in a playlist, deleted', { skip }, async (t) => {
  const browser = await launchBrowser(t)
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const email = uniqueEmail('console-screens')
  const { token } = await signUp(makeClient(svc.url).client, email, PASSWORD)
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const frame = await pairDevice(svc, token, { name: 'Hall frame', palette: 'bw', width: 400, height: 300 })
  const playlist = (await call('/api/playlists', { body: { name: 'Hallway', mode: 'sequential', itemSeconds: 3600 } })).body

  const { context, page } = await newPage(browser, DESKTOP)
  t.teardown(() => context.close())
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url })
  await signIn(page, svc.url, email)

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Screens' }).click()
  await page.getByRole('heading', { name: 'Screens', exact: true }).waitFor()
  await page.getByText('No screens yet.').waitFor()
  await checkScreen(t, page, 'screens-empty')

  // An empty name is said before anything is sent.
  await page.getByRole('button', { name: 'Create screen' }).click()
  await page.getByText('Give it a name').waitFor()
  await page.getByLabel('Screen name').fill('Hall board')
  await page.getByLabel('Template', { exact: true }).fill('<div class="box"><h1>{{ title }}</h1><p>{{ data.message }}</p></div>')
  await page.getByLabel('CSS', { exact: true }).fill('.box{padding:24px} h1{font-size:48px}')
  await page.getByLabel('Variables (JSON)').fill('{ "title": ')
  await page.getByRole('button', { name: 'Create screen' }).click()
  await page.getByText('Variables are not JSON').waitFor()
  t.pass('variables that are not JSON are refused before sending')
  await page.getByLabel('Variables (JSON)').fill('{ "title": "Welcome" }')
  await page.getByRole('button', { name: 'Create screen' }).click()

  const shown = page.getByTestId('webhook-token')
  await shown.waitFor()
  const webhookToken = (await shown.textContent()) ?? ''
  t.match(webhookToken, /^scr_/, 'the webhook token is shown after creation')
  t.match(await page.locator('pre.code').first().textContent(), `Bearer ${webhookToken}`, 'with the curl line to push data')
  await page.getByRole('button', { name: 'Copy token' }).click()
  await page.getByText('Copied.').waitFor()
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), webhookToken, 'the copy button puts the token on the clipboard')
  await page.getByRole('link', { name: 'Hall board' }).waitFor()
  await checkScreen(t, page, 'screens-created')

  const id = (await call('/api/screens')).body.screens[0].id as string
  const pushed = await jsonCall(svc.url, `/api/screens/${id}/data`, { token: webhookToken, body: { message: 'Doors open at nine' } })
  t.equal(pushed.status, 200, 'the token shown is the webhook token')

  await page.getByRole('link', { name: 'Edit it and see its preview' }).click()
  await page.getByRole('heading', { name: 'Hall board' }).waitFor()
  t.ok(await page.getByRole('option', { name: /Hall frame \(400×300 bw\)/ }).count(), 'the frame is offered for the preview')
  const font = await page.getByLabel('Liquid template').evaluate((el) => getComputedStyle(el).fontFamily)
  t.match(font, /mono|Menlo|Consolas/i, `the template is edited in a monospace face (${font})`)
  await page.waitForFunction(() => (document.querySelector('img.preview') as HTMLImageElement | null)?.naturalWidth === 400)
  const first = await previewSize(page)
  t.match(first, { complete: true, width: 400, height: 300, src: /^blob:/ }, 'the preview is the PNG at the frame\u2019s size')
  await page.getByText('400×300, bw panel').waitFor()
  await checkScreen(t, page, 'screen-editor-desktop')
  await page.setViewportSize(PHONE)
  await checkScreen(t, page, 'screen-editor')
  t.ok(
    await page.locator('img.preview').evaluate((img) => img.getBoundingClientRect().right <= window.innerWidth),
    'on a phone the preview fits the screen',
  )
  await page.setViewportSize(DESKTOP)

  // Typing a template that does not parse: drawn, said in words; nothing saved, the screen not failing.
  const savedTemplate = (await call(`/api/screens/${id}`)).body.template
  await page.getByLabel('Liquid template').fill('<h1>{% if %}</h1>')
  await page.getByText('The preview cannot be drawn:').waitFor({ timeout: 15_000 })
  t.notMatch(await page.getByRole('alert').first().textContent(), /"code"|^\s*\{/, 'the error is words, not JSON')
  await page.getByText('Unsaved changes: the frames show the saved screen until you save.').waitFor()
  await checkScreen(t, page, 'screen-editor-error')
  const whileTyping = (await call(`/api/screens/${id}`)).body
  t.equal(whileTyping.template, savedTemplate, 'the draft is not saved by typing')
  t.equal(whileTyping.lastError, null, 'nor is its failure the screen\u2019s')
  t.equal(await page.getByText(/The screen fails/).count(), 0)

  // Fixed by typing: the draft drawn, still not saved.
  const fixedTemplate = '<div class="box"><h1>{{ title }}</h1><p>{{ data.message }}</p><p>Fixed</p></div>'
  await page.getByLabel('Liquid template').fill(fixedTemplate)
  await page.getByText('The preview cannot be drawn:').waitFor({ state: 'detached', timeout: 15_000 })
  await page.waitForFunction((before) => {
    const img = document.querySelector('img.preview') as HTMLImageElement | null
    return img && img.src !== before && img.complete && img.naturalWidth === 400
  }, first.src)
  t.match(await previewSize(page), { width: 400, height: 300 }, 'the draft is drawn at the frame\u2019s size')
  t.equal((await call(`/api/screens/${id}`)).body.template, savedTemplate, 'and still not saved')

  // Leaving with unsaved changes asks first; staying keeps them.
  await page.getByRole('link', { name: '← All screens' }).click()
  await page.getByText('Hall board has unsaved changes.').waitFor()
  await page.getByRole('button', { name: 'Stay' }).click()
  await page.getByText('Hall board has unsaved changes.').waitFor({ state: 'detached' })
  t.equal(await page.getByLabel('Liquid template').inputValue(), fixedTemplate, 'staying keeps the draft')

  // Saved with Save: then the screen is the draft.
  await page.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByText('Saved: the frames showing this screen get it now.').waitFor()
  t.equal((await call(`/api/screens/${id}`)).body.template, fixedTemplate, 'Save saves the draft')
  t.ok(await page.getByRole('button', { name: 'Save', exact: true }).isDisabled(), 'nothing left to save')

  // The renderer: switched to Chromium, the draft drawn by it before saving, then saved with Save.
  t.equal(await page.getByTestId('screen-renderer').textContent(), 'Drawn by Takumi.', 'the record says its renderer')
  const byTakumi = (await previewSize(page)).src
  const drafts: unknown[] = []
  const seeDraft = (req: Request) => {
    if (req.method() === 'POST' && req.url().endsWith(`/api/screens/${id}/preview`)) drafts.push(req.postDataJSON())
  }
  page.on('request', seeDraft)
  await page.getByRole('combobox', { name: 'Renderer' }).selectOption('chromium')
  await page.getByText('Unsaved changes: the frames show the saved screen until you save.').waitFor()
  await page.waitForFunction(
    (before) => {
      const img = document.querySelector('img.preview') as HTMLImageElement | null
      return img && img.src !== before && img.complete && img.naturalWidth === 400
    },
    byTakumi,
    { timeout: 30_000 },
  )
  page.off('request', seeDraft)
  t.match(drafts.at(-1), { renderer: 'chromium', template: fixedTemplate }, 'the preview draws the draft with Chromium')
  t.equal(await page.getByText('The preview cannot be drawn:').count(), 0, 'and Chromium drew it')
  t.equal((await call(`/api/screens/${id}`)).body.renderer, 'takumi', 'choosing is not saving')
  await checkScreen(t, page, 'screen-editor-chromium')
  await page.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByText('Saved: the frames showing this screen get it now.').waitFor()
  t.equal((await call(`/api/screens/${id}`)).body.renderer, 'chromium', 'Save saves the renderer')
  t.equal(await page.getByTestId('screen-renderer').textContent(), 'Drawn by Chromium.', 'and the record says so')

  // Show now: the frame is sent the screen's picture.
  const before = (await call(`/api/device/${frame.deviceId}`)).body.desiredImageId
  await page.getByRole('button', { name: 'Show now on Hall frame' }).click()
  await page.getByText('Sent to Hall frame.').waitFor()
  const after = (await call(`/api/device/${frame.deviceId}`)).body.desiredImageId
  t.ok(after && after !== before, 'the frame is to show a new picture')
  const image = await appFetch(`${svc.url}/api/images/${after}/original`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(image.status, 200, 'the picture sent is stored')

  // In a playlist: added from here, and then the screen cannot be deleted until it is taken out.
  await page.getByRole('combobox', { name: /^Playlist/ }).selectOption({ label: 'Hallway' })
  await page.getByRole('button', { name: 'Add to playlist' }).click()
  await page.getByText('Added to').waitFor()
  const items = (await call(`/api/playlists/${playlist.id}`)).body.items
  t.match(items, [{ kind: 'screen', screenId: id }], 'the playlist has the screen')

  await page.getByRole('button', { name: 'Delete screen…' }).click()
  await page.getByRole('button', { name: 'Yes, delete' }).click()
  await page.getByText(/is an item of 1 playlist/).waitFor()
  t.pass('deleting a screen in a playlist is refused in words')
  await call(`/api/playlists/${playlist.id}/items/${items[0].id}`, { method: 'DELETE' })
  await page.getByRole('button', { name: 'Yes, delete' }).click()
  await page.getByRole('heading', { name: 'Screens', exact: true }).waitFor()
  await page.getByText('No screens yet.').waitFor()
  t.equal((await call(`/api/screens/${id}`)).status, 404, 'the screen is gone')

  // A TRMNL recipe (trmnlp's src/ files) imported, then previewed at the frame's size.
  const recipe = fileURLToPath(new URL('../../src/screens/recipes/examples/daily-quote/src/', import.meta.url))
  await page.getByLabel('Recipe files').setInputFiles([join(recipe, 'settings.yml'), join(recipe, 'full.liquid')])
  await page.getByRole('region', { name: 'Import a TRMNL recipe' }).getByRole('combobox', { name: 'Renderer' }).selectOption('chromium')
  await page.getByRole('button', { name: 'Import recipe' }).click()
  await page.getByText('Daily Quote is created.').waitFor()
  await page.getByRole('link', { name: 'Edit it and see its preview' }).click()
  await page.getByRole('heading', { name: 'Daily Quote' }).waitFor()
  await page.waitForFunction(() => (document.querySelector('img.preview') as HTMLImageElement | null)?.naturalWidth === 400)
  t.match(await previewSize(page), { width: 400, height: 300 }, 'the imported recipe is drawn at the frame\u2019s size')
  t.equal(await page.getByTestId('screen-renderer').textContent(), 'Drawn by Chromium.', 'by the renderer chosen on import')
  await checkScreen(t, page, 'screen-recipe')
})

t.test('in Chromium, a server without Chromium: the choice says so; should that go unsaid, the 422 is shown', { skip }, async (t) => {
  const browser = await launchBrowser(t)
  const svc = await startApp(t, { env: { CHROMIUM_PATH: '/nonexistent/chromium' } })
  const email = uniqueEmail('console-no-chromium')
  const { token } = await signUp(makeClient(svc.url).client, email, PASSWORD)
  const screen = (await jsonCall(svc.url, '/api/screens', { token, body: { name: 'Plain', template: '<p>{{ title }}</p>' } })).body
  const { context, page } = await newPage(browser, DESKTOP)
  t.teardown(() => context.close())
  await signIn(page, svc.url, email)

  await page.goto(`${svc.url}/screens`)
  const offered = page.getByRole('combobox', { name: 'Renderer' })
  await page
    .getByRole('option', { name: /Chromium.*not installed on this server/ })
    .first()
    .waitFor({ state: 'attached' })
  for (const chromium of await page.getByRole('option', { name: /^Chromium/ }).all())
    t.ok(await chromium.isDisabled(), 'Chromium is offered disabled (create and recipe import)')
  t.equal(await offered.count(), 2, 'on the new screen form and the recipe import')
  await page.getByText('Chromium is not installed on this server (no /nonexistent/chromium)').first().waitFor()
  await checkScreen(t, page, 'screens-no-chromium')

  // The list of renderers not answered (an older server, a failed request): the save's and
  // the preview's 422 say it instead of a raw error.
  await page.route('**/api/screens/renderers', (route) => route.abort())
  await page.goto(`${svc.url}/screens/${screen.id}`)
  await page.getByRole('heading', { name: 'Plain' }).waitFor()
  await page.getByRole('combobox', { name: 'Renderer' }).selectOption('chromium')
  await page.getByText('The preview cannot be drawn: renderer: Chromium is not installed on this server').waitFor({ timeout: 15_000 })
  await page.getByRole('button', { name: 'Save', exact: true }).click()
  await page
    .getByRole('alert')
    .filter({ hasText: /^renderer: Chromium is not installed on this server \(no \/nonexistent\/chromium\)/ })
    .waitFor()
  t.pass('the save is refused in the server\u2019s words')
  t.equal((await jsonCall(svc.url, `/api/screens/${screen.id}`, { token })).body.renderer, 'takumi', 'nothing saved')
})
