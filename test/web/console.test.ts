// The web console in a real browser (Chromium through playwright-core), against the real app:
// what a person does, from fresh browser contexts, on the phone layout, with axe-core checking
// each screen and a screenshot of each saved to .tap/screenshots/. How the page is served
// (caching, CSP, deep links that never shadow the API) is checked over plain HTTP first.
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import t, { type Test } from 'tap'
import type { Browser, Page } from 'playwright-core'
import { SimDevice, resolveProfile } from '../../device-sim/index.js'
import { ensureConsoleBuilt, webDist } from '../../src/web/build.js'
import { freePort, startApp, type TestApp } from '../helpers/app.js'
import { signUpAdmin } from '../helpers/admin.js'
import { accessibilityProblems, browserMissing, DESKTOP, launchBrowser, newPage, PHONE, screenshot } from '../helpers/browser.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { eventually, mqttUrl } from '../helpers/mqtt.js'
import { waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

const PASSWORD = 'correct-horse-battery'
const skip = browserMissing()

t.test('the console is served at / with its deep links, and never in place of the API', async (t) => {
  await ensureConsoleBuilt()
  const svc = await startApp(t)
  const html = { accept: 'text/html,application/xhtml+xml' }
  const index = await appFetch(`${svc.url}/`, { headers: html })
  t.equal(index.status, 200)
  t.match(index.headers.get('content-type'), /text\/html/)
  t.equal(index.headers.get('cache-control'), 'no-cache', 'index.html is never cached')
  const csp = index.headers.get('content-security-policy') ?? ''
  t.match(csp, /default-src 'self'/, 'a Content-Security-Policy that allows only this origin')
  t.match(csp, /script-src 'self'(;|$)/, 'no inline or foreign scripts')
  t.notMatch(csp, /unsafe-inline|unsafe-eval|\*/, 'nothing loosened')
  const body = await index.text()
  const asset = /src="(\/assets\/[^"]+\.js)"/.exec(body)?.[1]
  t.ok(asset, 'the page loads a hashed script')
  const script = await appFetch(`${svc.url}${asset}`)
  t.equal(script.status, 200)
  t.equal(script.headers.get('cache-control'), 'public, max-age=31536000, immutable', 'hashed assets are cached for a year')
  t.match(script.headers.get('content-type'), /javascript/)
  const compressed = await appFetch(`${svc.url}${asset}`, { headers: { 'accept-encoding': 'br' } })
  t.equal(compressed.headers.get('content-encoding'), 'br', 'sent Brotli-compressed to a browser that takes it')
  t.equal(
    await compressed.text(),
    await (await appFetch(`${svc.url}${asset}`, { headers: { 'accept-encoding': 'identity' } })).text(),
    'the same script',
  )

  for (const path of ['/devices/0b0e7a4e-0000-4000-8000-000000000000', '/pair?code=ABCD-EFGH', '/account', '/signin', '/invitations/x']) {
    const res = await appFetch(`${svc.url}${path}`, { headers: html })
    t.equal(res.status, 200, `${path}: the console's page (a deep link)`)
    t.equal(await res.text(), body)
  }
  // Paths the API, the docs, files, pages and the account routes own are never the console's page.
  for (const path of [
    '/api/nothing-here',
    '/api/device',
    '/docs/nothing',
    '/files/nothing',
    '/mqtt/x',
    '/accept-invitation/x/y',
    '/device/x',
    '/sign-in/email',
    '/reset-password/some-token/x',
    '/assets/no-such-file.js',
    '/favicon.ico',
  ]) {
    const res = await appFetch(`${svc.url}${path}`, { headers: html })
    const text = await res.text()
    t.not(text, body, `${path}: not the console`)
    t.ok(res.status >= 300, `${path}: ${res.status}`)
  }
  const json = await appFetch(`${svc.url}/devices/x`, { headers: { accept: 'application/json' } })
  t.equal(json.status, 404, 'a client asking for JSON gets the JSON 404')
  t.match(await json.json(), { code: 'NOT_FOUND' })
  const post = await appFetch(`${svc.url}/devices/x`, {
    method: 'POST',
    headers: { ...html, 'content-type': 'application/json' },
    body: '{}',
  })
  t.equal(post.status, 404, 'only GET and HEAD are answered with the page')
})

async function signInWithPassword(page: Page, svc: TestApp, email: string) {
  await page.goto(`${svc.url}/signin`)
  await page.getByLabel('E-mail').fill(email)
  await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Your devices' }).waitFor()
}

async function checkScreen(t: Test, page: Page, name: string) {
  t.same(await accessibilityProblems(page), [], `${name}: no serious or critical axe-core finding`)
  await screenshot(page, name)
}

/** A screen a desktop journey shows, checked on the desktop and then on a phone as well. */
async function checkBothLayouts(t: Test, page: Page, name: string) {
  await checkScreen(t, page, `${name}-desktop`)
  await page.setViewportSize(PHONE)
  await checkScreen(t, page, name)
  await page.setViewportSize(DESKTOP)
}

t.test('in Chromium', { skip }, async (t) => {
  const browser: Browser = await launchBrowser(t)
  const adminEmail = uniqueEmail('console-admin')
  const svc = await startApp(t, {
    env: {
      ADMIN_EMAILS: adminEmail,
      DEVICE_POLL_INTERVAL: '1',
      LOCAL_PROVIDER_DURATION_MS: '300',
      GENERATION_POLL_BASE_MS: '50',
      GENERATION_TICK_MS: '50',
    },
  })

  t.test('sign up, confirm the address from the e-mail, sign out, sign in again', async (t) => {
    const { context, page } = await newPage(browser)
    t.teardown(() => context.close())
    const email = uniqueEmail('console-signup')
    await page.goto(`${svc.url}/`)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    t.match(page.url(), /\/signin\?next=%2F$/, 'a signed-out visitor is sent to sign in')
    await checkScreen(t, page, 'sign-in')
    await page.getByRole('link', { name: 'Create an account' }).click()
    await page.getByRole('heading', { name: 'Create an account' }).waitFor()
    await page.getByRole('button', { name: 'Create account' }).click()
    t.ok(await page.getByText('Enter your name').isVisible(), 'an empty form says what is missing')
    await checkScreen(t, page, 'sign-up')
    await page.getByLabel('Name').fill('Ada')
    await page.getByLabel('E-mail').fill(email)
    await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByRole('heading', { name: 'Your devices' }).waitFor()
    await page.getByText('No frames yet.').waitFor()
    t.ok(await page.getByText('Check your inbox').isVisible(), 'the verify-e-mail notice is shown')
    await checkScreen(t, page, 'devices-empty')
    t.same(
      await page.evaluate(() => ({ local: Object.keys(localStorage), cookie: document.cookie })),
      { local: [], cookie: '' },
      'no token where a script can read it: the session is an httpOnly cookie',
    )

    const mail = await waitForMail(svc.dataDir, email, 'verify-email')
    await page.goto(mail.link as string)
    await page.getByRole('heading', { name: 'Your devices' }).waitFor()
    t.notOk(await page.getByText('Check your inbox').isVisible(), 'after the link, the notice is gone')

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    await page.getByLabel('E-mail').fill(email)
    await page.getByRole('textbox', { name: 'Password' }).fill('not-the-password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    const refused = page.getByRole('alert')
    await refused.waitFor()
    t.notMatch(await refused.textContent(), /[{}]/, `a wrong password is said in words: "${await refused.textContent()}"`)
    await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Your devices' }).waitFor()
    t.pass('signed in again')
  })

  t.test('forgot password: the e-mailed link opens the console, a new password works, by keyboard alone', async (t) => {
    const email = uniqueEmail('console-forgot')
    await signUp(makeClient(svc.url).client, email)
    const { context, page } = await newPage(browser)
    t.teardown(() => context.close())
    await page.goto(`${svc.url}/signin`)
    await page.getByRole('link', { name: 'Forgot your password?' }).click()
    await page.getByRole('heading', { name: 'Forgot your password?' }).waitFor()
    await checkScreen(t, page, 'forgot-password')
    // Keyboard only: focus the field, type, submit with Enter.
    await page.getByLabel('E-mail').focus()
    await page.keyboard.type(email)
    await page.keyboard.press('Enter')
    await page.getByText('a link to choose a new password is on its way').waitFor()
    const mail = await waitForMail(svc.dataDir, email, 'reset-password')
    await page.goto(mail.link as string)
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor()
    t.match(page.url(), /\/new-password\?token=/, 'the link lands on the console with its token')
    await checkScreen(t, page, 'new-password')
    await page.getByRole('textbox', { name: 'New password' }).fill('short')
    await page.getByRole('button', { name: 'Save password' }).click()
    t.ok(await page.getByText('At least 8 characters').first().isVisible(), 'too short: said before sending')
    await page.getByRole('textbox', { name: 'New password' }).fill('a-brand-new-password')
    await page.keyboard.press('Enter')
    await page.getByText('Your password is changed').waitFor()
    await page.getByRole('link', { name: 'Sign in' }).click()
    await page.getByLabel('E-mail').fill(email)
    await page.getByRole('textbox', { name: 'Password' }).fill('a-brand-new-password')
    // Tab from the password field reaches the Sign in button; Enter presses it.
    await page.getByRole('textbox', { name: 'Password' }).focus()
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Sign in', 'Tab moves to the Sign in button')
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Your devices' }).waitFor()
    t.pass('signed in with the new password')
  })

  t.test('pair a simulated frame by its code, watch it come online, generate, send a command', async (t) => {
    const email = uniqueEmail('console-pair')
    await signUp(makeClient(svc.url).client, email)
    const { context, page } = await newPage(browser)
    t.teardown(() => context.close())
    await signInWithPassword(page, svc, email)

    // A first load of / signed in, as a returning user opens it: what JavaScript it takes and when
    // the list is on screen (reported, not asserted: timings belong in benchmarks).
    const scripts = new Set<string>()
    const onResponse = (r: { url(): string }) => {
      const path = new URL(r.url()).pathname
      if (path.endsWith('.js')) scripts.add(path)
    }
    page.on('response', onResponse)
    await page.goto(`${svc.url}/`)
    await page.getByText('No frames yet.').waitFor()
    const shownAfter = await page.evaluate(() => Math.round(performance.now()))
    await page.getByText('Live', { exact: true }).waitFor()
    page.off('response', onResponse)
    let gz = 0
    for (const path of scripts) gz += (await stat(join(webDist, `${path}.gz`))).size
    t.ok(scripts.size > 0, 'the page loaded its scripts')
    // A size budget, not a timing: the bytes a first load costs are the same on any machine.
    t.ok(gz <= 200_000, `the first load is at most 200 kB of JavaScript gzipped (${gz} bytes)`)
    t.comment(
      `first load of /: ${scripts.size} scripts, ${(gz / 1024).toFixed(1)} KiB gzipped; the device list on screen ${shownAfter} ms after navigation started`,
    )

    const dir = await mkdtemp(join(tmpdir(), 'dps-console-sim-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const sim = new SimDevice({
      server: svc.url,
      name: 'kitchen',
      display: resolveProfile('bw-800x480'),
      statePath: join(dir, 'state.json'),
      outDir: join(dir, 'images'),
      firmware: '1.0.0',
      mqttUrl: mqttUrl(svc),
      reconnectMinMs: 100,
    })
    t.teardown(() => sim.stop())
    const pairing = new Promise<{ pinCode: string }>((resolve) => sim.once('pairing', resolve))
    const online = sim.start()
    const { pinCode } = await pairing

    await page.getByRole('link', { name: 'Pair a frame' }).click()
    await page.getByRole('heading', { name: 'Pair a frame' }).waitFor()
    await checkScreen(t, page, 'pair')
    await page.getByLabel('Code on the frame').fill(pinCode.toLowerCase())
    await page.getByLabel('Name').fill('Kitchen')
    await page.getByRole('button', { name: 'Pair' }).click()
    await page.getByRole('heading', { name: 'Kitchen' }).waitFor()
    t.match(page.url(), /\/devices\/[0-9a-f-]{36}$/, 'the new frame’s page')
    await online
    await page.getByTestId('online').waitFor({ timeout: 15_000 })
    t.pass('it turned online on the open page, without a reload')

    await page.getByLabel('Prompt').fill('a lighthouse at dusk')
    await page.getByRole('button', { name: 'Generate and send' }).click()
    await page.getByText('On the frame now.').waitFor({ timeout: 60_000 })
    const shownId = await page.locator('img[data-image-id]').getAttribute('data-image-id')
    t.ok(shownId, 'the page shows the image the frame reports')
    t.equal(shownId, sim.shownImageId, 'the one the simulated frame shows')
    // The element is there before its bytes are: wait for the load (a broken image never gets a width).
    const loaded = await page
      .waitForFunction(
        () => {
          const img = document.querySelector('img[data-image-id]') as HTMLImageElement | null
          return Boolean(img?.complete && img.naturalWidth > 0)
        },
        undefined,
        { timeout: 15_000 },
      )
      .then(
        () => true,
        () => false,
      )
    t.ok(loaded, 'and it loaded')

    await page.getByRole('button', { name: 'Identify' }).click()
    await page.getByText('The frame acknowledged “identify”.').waitFor({ timeout: 20_000 })
    t.pass('a command and its acknowledgement')

    const photo = join(dir, 'photo.png')
    await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 200, g: 80, b: 40 } } })
      .png()
      .toFile(photo)
    await page.getByLabel('Photo', { exact: true }).setInputFiles(photo)
    await page.getByRole('button', { name: 'Upload and send' }).click()
    await page.getByText('Sent. The frame shows it once it has downloaded it.').waitFor()
    const before = shownId
    await page.waitForFunction(
      (old) => {
        const img = document.querySelector('img[data-image-id]')
        return img && img.getAttribute('data-image-id') !== old
      },
      before,
      { timeout: 45_000 },
    )
    t.equal(
      await page.locator('img[data-image-id]').getAttribute('data-image-id'),
      sim.shownImageId,
      'the uploaded photo is what the frame shows now',
    )
    await checkScreen(t, page, 'device')

    await page.getByRole('link', { name: '← All devices' }).click()
    const card = page.getByRole('link', { name: /Kitchen/ })
    await card.getByTestId('online').waitFor()
    t.ok(await card.locator('img').isVisible(), 'the list shows the frame online with its picture')
    await checkScreen(t, page, 'devices')
  })

  t.test('invite a second person into an organization; they accept and use its frame, without deleting it', async (t) => {
    const ownerEmail = uniqueEmail('console-owner')
    const memberEmail = uniqueEmail('console-member')
    const owner = await signUp(makeClient(svc.url).client, ownerEmail)
    await signUp(makeClient(svc.url).client, memberEmail)
    // Only a proven address may take up an invitation: the member confirms theirs from the e-mail.
    const verify = await waitForMail(svc.dataDir, memberEmail, 'verify-email')
    t.ok((await appFetch(verify.link as string, { redirect: 'manual' })).status < 400)

    const a = await newPage(browser, DESKTOP)
    const b = await newPage(browser)
    t.teardown(() => Promise.all([a.context.close(), b.context.close()]))
    await signInWithPassword(a.page, svc, ownerEmail)
    await a.page.getByRole('link', { name: 'Organizations' }).click()
    await a.page.getByRole('heading', { name: 'Organizations', level: 1 }).waitFor()
    await a.page.getByText('You are in no organization yet.').waitFor()
    await a.page.getByLabel('Organization name').fill('Family')
    await a.page.getByRole('button', { name: 'Create' }).click()
    await a.page.getByRole('heading', { name: 'Family' }).waitFor()
    await a.page.getByLabel('Their e-mail').fill(memberEmail)
    await a.page.getByRole('button', { name: 'Send invitation' }).click()
    await a.page.getByText(`Invitation sent to ${memberEmail}.`).waitFor()
    await a.page.getByText(`${memberEmail} as member`).waitFor()
    t.pass('the owner created an organization and invited a member')
    await checkBothLayouts(t, a.page, 'organizations')

    // The frame is the organization's (paired into it through the API, as the pairing screen does).
    const orgs = (await (
      await appFetch(`${svc.url}/api/auth/organization/list`, { headers: { authorization: `Bearer ${owner.token}` } })
    ).json()) as Array<{ id: string; name: string }>
    const family = orgs.find((o) => o.name === 'Family')!
    const frame = await pairDevice(svc, owner.token, { name: 'Hallway', organizationId: family.id })

    // The member opens the e-mail's link signed out: sign in, and back to the invitation.
    const invitation = await waitForMail(svc.dataDir, memberEmail, 'invitation')
    t.match(new URL(invitation.link as string).pathname, /^\/invitations\/[^/]+$/, "the e-mail links to the console's invitation page")
    await b.page.goto(invitation.link as string)
    await b.page.getByLabel('E-mail').fill(memberEmail)
    await b.page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
    await b.page.getByRole('button', { name: 'Sign in' }).click()
    await b.page.getByText(`${ownerEmail} invites you to join`).waitFor()
    t.equal(new URL(b.page.url()).pathname, new URL(invitation.link as string).pathname, 'back on the invitation after signing in')
    await checkScreen(t, b.page, 'invitation')
    await b.page.getByRole('button', { name: 'Accept' }).click()
    await b.page.getByRole('heading', { name: 'Family' }).waitFor()
    await b.page.getByText('active', { exact: true }).waitFor()
    t.pass('accepted: the organization is theirs and active')
    t.ok(await b.page.getByText('Only owners and admins invite and manage members.').isVisible(), 'a member does not manage members')
    await b.page.getByRole('link', { name: 'Devices' }).click()
    await b.page.getByRole('link', { name: /Hallway/ }).click()
    await b.page.getByRole('heading', { name: 'Hallway' }).waitFor()
    await b.page.getByText('You see this frame as a member of its organization').waitFor()
    t.equal(await b.page.getByRole('button', { name: 'Delete…' }).count(), 0, 'the member sees no delete button')
    t.equal(await b.page.getByRole('button', { name: 'Identify' }).count(), 0, 'nor commands or settings')
    const refused = await b.page.evaluate(async (deviceId) => {
      const res = await fetch('/api/device/delete', {
        method: 'DELETE',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ deviceId }),
      })
      return { status: res.status, body: await res.json() }
    }, frame.deviceId)
    t.equal(refused.status, 403, 'and the API refuses the member a delete anyway')
    t.match(refused.body, { code: String })
    const command = await b.page.evaluate(async (deviceId) => {
      const res = await fetch(`/api/device/${deviceId}/command`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ command: 'identify' }),
      })
      return { status: res.status, body: await res.json() }
    }, frame.deviceId)
    t.equal(command.status, 403, 'a command from a member is refused by the API too')
    t.match(command.body, { message: /owner or an organization admin/ })
    await checkScreen(t, b.page, 'device-member')
  })

  t.test('the QR link a frame shows leads a newcomer, through creating an account, to pairing it', async (t) => {
    const email = uniqueEmail('console-qr')
    const init = (await (
      await appFetch(`${svc.url}/api/device/init`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ display: { width: 800, height: 480, palette: 'bw' }, model: 'test-frame', firmware: '1.0.0' }),
      })
    ).json()) as { verification_uri_complete: string; pinCode: string }
    const { context, page } = await newPage(browser)
    t.teardown(() => context.close())
    await page.goto(init.verification_uri_complete)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    t.match(
      decodeURIComponent(page.url()),
      new RegExp(`next=/pair\\?code=${init.pinCode}$`),
      'signed out: sign in first, then back to pairing',
    )
    // No account yet: create one on the way, and come back to the frame.
    await page.getByRole('link', { name: 'Create an account' }).click()
    await page.getByLabel('Name').fill('Newcomer')
    await page.getByLabel('E-mail').fill(email)
    await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByText(`check that the frame shows ${init.pinCode}`).waitFor()
    t.pass('after creating the account, back on the pairing screen, showing the pin to compare with the frame')
    t.equal(await page.getByLabel('Code on the frame').inputValue(), init.pinCode, 'the code is filled in: nothing to type')
    await page.getByLabel('Name').fill('Study')
    await page.getByRole('button', { name: 'Pair' }).click()
    await page
      .getByRole('heading', { name: 'Study' })
      .waitFor()
      .catch(async (err) => {
        throw new Error(`${err.message}; the page says: ${await page.locator('main').textContent()}`)
      })
    t.pass('paired from the QR link')
  })

  t.test('make a playlist, reorder it by keyboard, and give a frame a day plan with a night-time sleep window', async (t) => {
    const email = uniqueEmail('console-plan')
    const owner = await signUp(makeClient(svc.url).client, email)
    const frame = await pairDevice(svc, owner.token, { name: 'Landing' })
    const { context, page } = await newPage(browser, DESKTOP)
    t.teardown(() => context.close())
    await signInWithPassword(page, svc, email)
    await page.getByRole('link', { name: 'Playlists' }).click()
    await page.getByText('No playlists yet.').waitFor()
    await page.getByLabel('Playlist name').fill('Family photos')
    await page.getByLabel('Minutes per item').fill('30')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('heading', { name: 'Family photos' }).waitFor()
    await page.getByText('No items yet').waitFor()

    const dir = await mkdtemp(join(tmpdir(), 'dps-console-plan-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    for (const [name, background] of [
      ['red.png', { r: 200, g: 30, b: 30 }],
      ['blue.png', { r: 30, g: 30, b: 200 }],
    ] as const) {
      const file = join(dir, name)
      await sharp({ create: { width: 320, height: 240, channels: 3, background } })
        .png()
        .toFile(file)
      await page.getByLabel('Photo', { exact: true }).setInputFiles(file)
      await page.getByRole('button', { name: 'Add photo' }).click()
      await page
        .getByRole('button', { name: /^Move Item \d: photo$/ })
        .nth(name === 'red.png' ? 0 : 1)
        .waitFor()
    }
    await page.getByLabel('Prompt', { exact: true }).fill('a lighthouse at dusk')
    await page.getByRole('button', { name: 'Add prompt' }).click()
    await page.getByRole('button', { name: 'Move Item 3: a new picture from a prompt' }).waitFor()
    await page.waitForFunction(() =>
      [...document.querySelectorAll('ol.playlist img')].every((i) => (i as HTMLImageElement).naturalWidth > 0),
    )
    t.pass('two photos with thumbnails and a prompt')
    const listId = new URL(page.url()).pathname.split('/').pop()!
    const order = async () =>
      (
        (await (await appFetch(`${svc.url}/api/playlists/${listId}`, { headers: { authorization: `Bearer ${owner.token}` } })).json()) as {
          items: Array<{ id: string; kind: string }>
        }
      ).items
    const before = await order()
    // Keyboard reordering: lift the first item, move it down one, drop it.
    await page.getByRole('button', { name: 'Move Item 1: photo' }).focus()
    // dnd-kit measures the list between the keys, as a person's pauses would let it.
    await page.keyboard.press('Space')
    await page.waitForTimeout(300)
    await page.keyboard.press('ArrowDown')
    await page.waitForTimeout(300)
    await page.keyboard.press('Space')
    const after = await eventually(async () => {
      const now = await order()
      return now[0]!.id === before[1]!.id ? now : null
    })
    t.same(
      after.map((i) => i.id),
      [before[1]!.id, before[0]!.id, before[2]!.id],
      'the first photo moved down one, saved',
    )
    await checkBothLayouts(t, page, 'playlist')

    await page.goto(`${svc.url}/devices/${frame.deviceId}`)
    await page.getByRole('heading', { name: 'Day plan' }).waitFor()
    await page.getByText('No day plan').waitFor()
    // A label around a select names it with the chosen option too ("Playlist Family photos (3)").
    await page.getByRole('combobox', { name: /^Playlist/ }).selectOption({ label: 'Family photos (3)' })
    await page.getByLabel('From', { exact: true }).fill('07:00')
    await page.getByLabel('To', { exact: true }).fill('22:00')
    await page.getByLabel('Time zone').fill('Europe/Berlin')
    await page.getByRole('button', { name: 'Add to the day plan' }).click()
    await page.getByText('Family photos · 07:00–22:00 · every day').waitFor()
    await page.getByLabel('Sleep from').fill('23:00')
    await page.getByLabel('Wake at').fill('06:30')
    await page.getByRole('button', { name: 'Add sleep window' }).click()
    await page.getByText('Asleep 23:00–06:30 every day').waitFor()
    t.match(
      await page.getByTestId('schedule-now').textContent(),
      /(Playing Family photos|Asleep until|Nothing planned right now).*\(Europe\/Berlin\)/,
    )
    t.match(
      await page.getByRole('img', { name: /^Today: / }).getAttribute('aria-label'),
      /Family photos 07:00–22:00.*asleep 23:00–24:00/,
      'the day view shows both',
    )
    // An overlapping rule is refused in the service's words.
    await page.getByLabel('From', { exact: true }).fill('21:00')
    await page.getByLabel('To', { exact: true }).fill('23:00')
    await page.getByRole('button', { name: 'Add to the day plan' }).click()
    await page.getByText(/rules\[1\]: overlaps rules\[0\]/).waitFor()
    t.pass('an overlapping rule is refused, said in words')
    const saved = await (
      await appFetch(`${svc.url}/api/device/${frame.deviceId}/schedule`, { headers: { authorization: `Bearer ${owner.token}` } })
    ).json()
    t.match(saved, {
      timeZone: 'Europe/Berlin',
      rules: [{ playlistId: listId, from: '07:00', to: '22:00' }],
      sleep: [{ from: '23:00', to: '06:30' }],
    })
    await checkBothLayouts(t, page, 'device-plan')
    await page.getByRole('button', { name: 'Remove the day plan' }).click()
    await page.getByText('No day plan').waitFor()
    t.equal(
      (await appFetch(`${svc.url}/api/device/${frame.deviceId}/schedule`, { headers: { authorization: `Bearer ${owner.token}` } })).status,
      404,
      'removed',
    )
  })

  t.test('a session revoked from another browser is signed out on its next action', async (t) => {
    const email = uniqueEmail('console-revoke')
    await signUp(makeClient(svc.url).client, email)
    // One on a desktop, one on a phone.
    const a = await newPage(browser, DESKTOP)
    const b = await newPage(browser)
    t.teardown(() => Promise.all([a.context.close(), b.context.close()]))
    await signInWithPassword(a.page, svc, email)
    await signInWithPassword(b.page, svc, email)
    await a.page.getByRole('link', { name: 'Account' }).click()
    await a.page.getByRole('heading', { name: 'Where you are signed in' }).waitFor()
    await checkBothLayouts(t, a.page, 'account')
    // An API key: shown once, works as x-api-key, gone when deleted.
    await a.page.getByLabel('Key name', { exact: true }).fill('kitchen script')
    await a.page.getByRole('button', { name: 'Create a key' }).click()
    const key = (await a.page.getByTestId('new-api-key').textContent()) ?? ''
    t.match(key, /^dps_/, 'the new key is shown once')
    t.equal((await appFetch(`${svc.url}/api/device`, { headers: { 'x-api-key': key } })).status, 200, 'and it works')
    await a.page.getByRole('button', { name: 'Delete kitchen script' }).click()
    await a.page.getByText('No keys.').waitFor()
    t.equal((await appFetch(`${svc.url}/api/device`, { headers: { 'x-api-key': key } })).status, 401, 'deleted: refused')

    // Notification preferences are saved as they are ticked.
    const presence = a.page.getByRole('checkbox', { name: 'one of my frames goes online or offline' })
    await presence.waitFor()
    t.equal(await presence.isChecked(), true, 'presence notifications are on by default')
    const saved = a.page.waitForResponse((r) => r.url().endsWith('/api/notifications/preferences') && r.request().method() === 'PATCH')
    await presence.uncheck()
    t.equal((await saved).status(), 200, 'saved')
    await a.page.reload()
    await a.page.getByRole('checkbox', { name: 'one of my frames goes online or offline' }).waitFor()
    t.equal(
      await a.page.getByRole('checkbox', { name: 'one of my frames goes online or offline' }).isChecked(),
      false,
      'unticked, and still so after a reload',
    )
    // This browser: the service worker registers under the page's CSP; whether Chromium's push
    // service is reachable depends on the network (closed here), and either answer is said in words.
    await a.context.grantPermissions(['notifications'], { origin: svc.url })
    await a.page.getByRole('button', { name: 'Notify me in this browser' }).click()
    const outcome = a.page.getByText(/This browser gets notifications\.|This browser could not reach its push service/)
    await outcome.waitFor({ timeout: 20_000 })
    t.comment(`notify me in this browser: ${await outcome.textContent()}`)
    t.ok(await a.page.evaluate(async () => Boolean(await navigator.serviceWorker.getRegistration('/'))), 'the service worker is registered')
    // The user's sessions: the one the sign-up made (node), this browser's, and the other browser's.
    const other = a.page
      .getByRole('row')
      .filter({ hasText: 'Chrome' })
      .filter({ hasNot: a.page.getByText('(this one)') })
      .getByRole('button', { name: 'Sign out' })
    await other.click()
    await a.page.getByRole('row').filter({ hasText: 'Chrome' }).nth(1).waitFor({ state: 'detached' })
    t.pass('the other browser’s session is gone from the list')
    await b.page.getByRole('link', { name: 'Account' }).click()
    await b.page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 15_000 })
    t.pass('the revoked browser is back at sign-in')
    await a.page.reload()
    await a.page.getByRole('heading', { name: 'Account' }).waitFor()
    t.pass('the browser that revoked it stays signed in')
  })

  t.test('an administrator grants credits, acts as a user and back, and bans a user whose open console is signed out', async (t) => {
    await signUpAdmin(svc, adminEmail)
    const email = uniqueEmail('console-banned')
    await signUp(makeClient(svc.url).client, email)
    const admin = await newPage(browser, DESKTOP)
    const victim = await newPage(browser)
    t.teardown(() => Promise.all([admin.context.close(), victim.context.close()]))
    await signInWithPassword(victim.page, svc, email)
    await signInWithPassword(admin.page, svc, adminEmail)
    await admin.page.getByRole('link', { name: 'Administration' }).click()
    await admin.page.getByRole('heading', { name: 'Users' }).waitFor()
    await admin.page.getByLabel('E-mail contains').fill(email)
    await admin.page.getByRole('button', { name: 'Search' }).click()
    await admin.page.getByRole('button', { name: `Ban ${email}` }).waitFor()
    t.equal(await admin.page.getByRole('row').count(), 2, 'the search finds the one user (and the header row)')
    await admin.page.getByRole('button', { name: 'Sessions and credits' }).click()
    await admin.page.getByLabel('Credits').fill('12.50')
    await admin.page.getByRole('button', { name: 'Grant' }).click()
    await admin.page.getByText('Granted. New balance: 12.50 credits.').waitFor()
    t.pass('credits granted, the new balance shown')
    await checkBothLayouts(t, admin.page, 'admin')

    await admin.page.getByRole('button', { name: `Act as ${email}` }).click()
    await admin.page.getByText(`You are acting as ${email}.`).waitFor()
    t.pass('acting as the user, said on the screen')
    await admin.page.getByRole('button', { name: `Stop acting as ${email}` }).click()
    await admin.page.getByRole('heading', { name: 'Administration' }).waitFor()

    await admin.page.getByLabel('E-mail contains').fill(email)
    await admin.page.getByRole('button', { name: 'Search' }).click()
    await admin.page.getByRole('button', { name: `Ban ${email}` }).click()
    await admin.page.getByRole('button', { name: `Unban ${email}` }).waitFor()
    t.pass('banned')
    await victim.page.getByRole('link', { name: 'Pair a frame' }).click()
    await victim.page.getByRole('link', { name: 'Devices' }).click()
    await victim.page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 15_000 })
    t.pass('the banned user’s open console is signed out on the next action')
  })

  t.test("an administrator ships firmware to a frame; its owner sees it installed and reads the frame's logs", async (t) => {
    // The administrator signed up in the test before this one.
    const owner = uniqueEmail('console-fw')
    const { token } = await signUp(makeClient(svc.url).client, owner)
    const dir = await mkdtemp(join(tmpdir(), 'dps-console-fw-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const sim = new SimDevice({
      server: svc.url,
      name: 'hallway',
      display: resolveProfile('bw-800x480'),
      statePath: join(dir, 'state.json'),
      model: 'console-frame',
      firmware: '1.0.0',
      claimToken: token,
      mqttUrl: mqttUrl(svc),
      rebootMs: 50,
    })
    t.teardown(() => sim.stop())
    await sim.start()

    const admin = await newPage(browser, DESKTOP)
    t.teardown(() => admin.context.close())
    const page = admin.page
    await signInWithPassword(page, svc, adminEmail)
    await page.getByRole('link', { name: 'Administration' }).click()
    await page.getByRole('link', { name: /Firmware releases and rollouts/ }).click()
    await page.getByLabel('Model', { exact: true }).fill('console-frame')
    await page.getByLabel('Version', { exact: true }).fill('1.1.0')
    await page
      .getByLabel('Image')
      .setInputFiles({ name: 'fw.bin', mimeType: 'application/octet-stream', buffer: Buffer.from('firmware '.repeat(100)) })
    await page.getByRole('button', { name: 'Upload and sign' }).click()
    await page.getByText('Release 1.1.0 is stored and signed.').waitFor()
    // A rollout reaches only the fleet an administrator enrolled.
    await page.getByLabel('Device ids').fill(sim.deviceId!)
    await page.getByRole('button', { name: 'Enroll in the fleet' }).click()
    await page.getByText('Enrolled 1 device.').waitFor()
    await page.getByLabel('Rollout model').fill('console-frame')
    await page.getByLabel('Target version').fill('1.1.0')
    await page.getByLabel('Share (%)').fill('100')
    await page.getByRole('button', { name: 'Roll out' }).click()
    await page.getByText('Offered to 1 more device.').waitFor()
    await page
      .getByTestId('counts-console-frame-1.1.0')
      .getByText(/^1 installed/)
      .waitFor({ timeout: 30_000 })
    t.equal(sim.firmware, '1.1.0', 'the frame installed it')
    t.match(await page.getByTestId('rollout-console-frame-stable').textContent(), /running/)
    await checkBothLayouts(t, page, 'firmware')

    // The frame restarted into 1.1.0 a moment ago: a batch sent while it reconnects would go nowhere.
    await eventually(async () => sim.sendLogs(6), 30_000)
    const mine = await newPage(browser, DESKTOP)
    t.teardown(() => mine.context.close())
    await signInWithPassword(mine.page, svc, owner)
    await mine.page.goto(`${svc.url}/devices/${sim.deviceId}`)
    await mine.page
      .getByTestId('firmware-state')
      .getByText(/Runs 1\.1\.0/)
      .waitFor()
    t.match(await mine.page.getByTestId('firmware-state').textContent(), /Update to 1\.1\.0: installed/)
    // The batch arrives while the page is open: Refresh shows it without a reload.
    await eventually(async () => {
      await mine.page.getByRole('button', { name: 'Refresh logs' }).click()
      return mine.page
        .locator('.logs li')
        .nth(5)
        .waitFor({ timeout: 2000 })
        .then(
          () => true,
          () => false,
        )
    }, 30_000)
    t.equal(await mine.page.locator('.logs li').count(), 6, 'all six entries')
    await mine.page.getByLabel('Contains').fill('heartbeat')
    await mine.page
      .locator('.logs li')
      .first()
      .getByText(/heartbeat/)
      .waitFor()
    t.equal(await mine.page.locator('.logs li').count(), 4, 'the text filter keeps the heartbeats')
    await mine.page.getByLabel('Level').selectOption('error')
    await mine.page.getByText('No log entries match.').waitFor()
    t.pass('the level filter hides what is below it')
  })
})

t.test('passkeys in Chromium: add one with a virtual authenticator, sign out, sign in with it', { skip }, async (t) => {
  const browser = await launchBrowser(t)
  // WebAuthn needs a domain (not an IP address) as the relying party: the service is addressed as localhost.
  const port = await freePort()
  await startApp(t, { env: { PORT: String(port), BASE_URL: `http://localhost:${port}` } })
  const local = `http://localhost:${port}`
  const email = uniqueEmail('console-passkey')
  await signUp(makeClient(local).client, email)
  const { context, page } = await newPage(browser, DESKTOP)
  t.teardown(() => context.close())
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  await page.goto(`${local}/signin`)
  await page.getByLabel('E-mail').fill(email)
  await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Your devices' }).waitFor()
  await page.getByRole('link', { name: 'Account' }).click()
  await page.getByText('None yet: add one to sign in without a password.').waitFor()
  await page.getByLabel('Passkey name').fill('Laptop')
  await page.getByRole('button', { name: 'Add a passkey' }).click()
  await page.getByRole('button', { name: 'Remove Laptop' }).waitFor()
  t.pass('a passkey added from the account screen')
  await page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  await page.getByRole('tab', { name: 'Passkey' }).click()
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  await page.getByRole('heading', { name: 'Your devices' }).waitFor()
  t.pass('signed in with it, no password')
})
