// Stored text is shown as text: markup, script and javascript: URLs stored in every field the
// console shows (names of people, organizations, devices and playlists, descriptions, prompts,
// firmware notes, log lines and their fields, logo and picture URLs) are loaded on every page that
// shows them, in Chromium. No payload may run (a flag it would set stays unset, no dialog opens,
// the page's CSP reports nothing it had to block), none becomes markup (no element it would
// create), and the text itself is on the page. The invitation page rendered without JavaScript too.
import t from 'tap'
import type { Browser, Page } from 'playwright-core'
import { startApp, type TestApp } from '../helpers/app.js'
import { signUpAdmin } from '../helpers/admin.js'
import { browserMissing, DESKTOP, launchBrowser, newPage } from '../helpers/browser.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

const skip = browserMissing()
const PASSWORD = 'correct-horse-battery'

/** Each would set window.__xss (or open a dialog) if it ever ran. */
const P = {
  img: `<img src=x onerror="window.__xss='img'">`,
  script: `<script>window.__xss='script'</script>`,
  svg: `<svg onload="alert('svg')">`,
  attr: `"><img src=x onerror=window.__xss='attr'>`,
  js: `javascript:window.__xss='js'`,
  iframe: `<iframe src="javascript:alert('iframe')">`,
}
/** What a payload would create in the page: none of it may exist. */
const PLANTED =
  'img[src="x"], svg[onload], [onerror], [onload], iframe[src^="javascript:" i], a[href^="javascript:" i], [src^="javascript:" i]'

type Seen = { dialogs: string[]; violations: string[] }

async function watchedPage(browser: Browser, svc: TestApp, email: string): Promise<{ page: Page; seen: Seen }> {
  const { context, page } = await newPage(browser, DESKTOP)
  const seen: Seen = { dialogs: [], violations: [] }
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message())
    void d.dismiss()
  })
  await context.exposeFunction('__cspViolation', (what: string) => seen.violations.push(what))
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      (window as unknown as { __cspViolation(s: string): void }).__cspViolation(`${e.violatedDirective} ${e.blockedURI}`),
    )
  })
  await page.goto(`${svc.url}/signin`)
  await page.getByLabel('E-mail').fill(email)
  await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Your devices' }).waitFor()
  return { page, seen }
}

/** Loads `path`, waits for `shown` (stored text the page must show as text), and checks nothing ran or was planted. */
async function check(t: Tap, page: Page, seen: Seen, svc: TestApp, path: string, shown: string[]) {
  await page.goto(`${svc.url}${path}`)
  for (const text of shown) await page.getByText(text, { exact: false }).first().waitFor({ timeout: 15_000 })
  // Give late renders (live state, lazy cards) a moment.
  await page.waitForTimeout(300)
  t.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined, `${path}: no payload ran`)
  t.same(seen.dialogs, [], `${path}: no dialog opened`)
  t.same(seen.violations, [], `${path}: the page's CSP had nothing to block`)
  t.same(
    await page.evaluate((sel) => [...document.querySelectorAll(sel)].map((e) => e.outerHTML.slice(0, 80)), PLANTED),
    [],
    `${path}: no element planted`,
  )
  t.same(
    await page.evaluate(() =>
      [...document.querySelectorAll('script')].map((e) => e.textContent ?? '').filter((s) => /__xss|alert\(/.test(s)),
    ),
    [],
    `${path}: no script of the payloads' in the page`,
  )
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0]

t.test('stored markup, scripts and javascript: URLs stay text on every page', { skip }, async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', ADMIN_EMAILS: 'xss-admin@example.com' } })
  const api = (path: string, token: string, body?: unknown, method?: string) => jsonCall(svc.url, path, { token, body, method })
  const ok = async (res: Promise<{ status: number; body: unknown }>, what: string) => {
    const r = await res
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body as Record<string, unknown>
  }

  // The owner: a name of markup, a picture URL that is a script.
  const ownerEmail = uniqueEmail('xss-owner')
  const owner = makeClient(svc.url)
  const { token } = await signUp(owner.client, ownerEmail, PASSWORD, P.img)
  await ok(api('/api/auth/update-user', token, { image: P.js }), 'update-user image')
  const org = await owner.client.organization.create({ name: `${P.svg} ${P.script}`, slug: `xss-${Date.now().toString(36)}`, logo: P.js })
  if (org.error) throw new Error(org.error.message)
  const orgId = org.data!.id

  // Devices with markup in their names and descriptions, one in the organization.
  const dev = await pairDevice(svc, token, { name: P.img })
  await ok(api(`/api/device/${dev.deviceId}`, token, { description: `${P.script} ${P.attr} ${P.js}` }, 'PATCH'), 'patch description')
  const orgDev = await pairDevice(svc, token, { name: P.attr, organizationId: orgId })
  await ok(api(`/api/device/${orgDev.deviceId}`, token, { description: P.iframe }, 'PATCH'), 'patch org device')

  // A prompt and a generation whose text is markup.
  await ok(api('/api/prompts', token, { text: `${P.img} ${P.script}`, deviceId: dev.deviceId }), 'prompt')
  await ok(api('/api/generate', token, { prompt: { text: `${P.svg} a lighthouse` }, deviceId: dev.deviceId, model: 'local' }), 'generate')

  // Log lines (and their fields) from the device itself.
  const logs = await appFetch(`${svc.url}/api/device/${dev.deviceId}/logs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${dev.password}`, 'content-type': 'application/json' },
    body: JSON.stringify(
      Object.values(P).map((message, i) => ({
        at: Date.now() - i * 1000,
        level: i % 2 ? 'error' : 'info',
        message,
        fields: { html: P.img, url: P.js },
      })),
    ),
  })
  t.equal(logs.status, 200, 'the log lines were stored')

  // A playlist named in markup.
  const playlist = await ok(api('/api/playlists', token, { name: P.img, mode: 'sequential', itemSeconds: 600 }), 'playlist')

  // An invitation to the organization, for someone whose own name is markup too.
  const inviteeEmail = uniqueEmail('xss-invitee')
  const invitee = makeClient(svc.url)
  await signUp(invitee.client, inviteeEmail, PASSWORD, P.attr)
  const verify = await waitForMail(svc.dataDir, inviteeEmail, 'verify-email')
  await appFetch(verify.link!, { redirect: 'manual' })
  const invitation = await owner.client.organization.inviteMember({ email: inviteeEmail, role: 'member', organizationId: orgId })
  if (invitation.error) throw new Error(invitation.error.message)

  // An administrator sees every user's name and a release's notes.
  const admin = await signUpAdmin(svc, 'xss-admin@example.com')
  const form = new FormData()
  form.append('model', 'xss-frame')
  form.append('version', '1.0.0')
  form.append('channel', 'stable')
  form.append('notes', `${P.script} ${P.img} ${P.js}`)
  form.append('file', new Blob([new Uint8Array(2048).fill(7)]), 'firmware.bin')
  const release = await appFetch(`${svc.url}/api/admin/firmware`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin.token}` },
    body: form,
  })
  t.equal(release.status, 201, 'a release with notes of markup')

  const browser = await launchBrowser(t)

  const o = await watchedPage(browser, svc, ownerEmail)
  await check(t, o.page, o.seen, svc, '/', [P.img, P.attr])
  await check(t, o.page, o.seen, svc, `/devices/${dev.deviceId}`, [P.img, P.script])
  await check(t, o.page, o.seen, svc, `/devices/${orgDev.deviceId}`, [P.attr])
  await check(t, o.page, o.seen, svc, '/organizations', [P.svg])
  await check(t, o.page, o.seen, svc, '/playlists', [P.img])
  await check(t, o.page, o.seen, svc, `/playlists/${playlist.id}`, [P.img])
  // The name is in the form's field here (a value, not text).
  await check(t, o.page, o.seen, svc, '/account', [])

  const i = await watchedPage(browser, svc, inviteeEmail)
  await check(t, i.page, i.seen, svc, `/invitations/${invitation.data!.id}`, [P.svg])
  // The page that works without JavaScript, rendered by the server.
  await check(t, i.page, i.seen, svc, `/accept-invitation/${invitation.data!.id}`, [P.svg])

  const a = await watchedPage(browser, svc, 'xss-admin@example.com')
  await check(t, a.page, a.seen, svc, '/admin', [P.img, P.attr])
  await check(t, a.page, a.seen, svc, '/admin/firmware', ['xss-frame'])
})
