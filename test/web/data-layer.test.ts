// The console's data layer (web/src/queries) in Node against the real app, with a QueryClient as
// the console's screens use it: each factory's fetcher answers what its screen shows, a refusal
// is an error with the service's words and HTTP status (the session gate and the retry rule read
// it), and each mutation changes the cache under the keys the screens read: the data it answers
// set in place, what it changed marked stale (and read again when a screen shows it), nothing else.
// The browser journeys (console.test.ts) drive the same code through the pages in Chromium.
import t, { type Test } from 'tap'
import { MutationObserver, QueryClient, QueryObserver } from '@tanstack/react-query'
import { DEFAULT_DISPLAY } from '../../src/images/profiles.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { signUpAdmin } from '../helpers/admin.js'
import { CookieJar, makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { consoleModules, openPage } from '../helpers/console-page.js'
import { waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

const PASSWORD = 'correct-horse-battery'

// The console's modules are loaded by path (see console-page.ts), so what they answer is untyped here;
// their own types are checked by `tsc -p web`.

/** Runs a mutation factory's options as useMutation would: its callbacks, then the caller's. */
const run = (qc: QueryClient, options: any, variables?: unknown): Promise<any> =>
  new MutationObserver<any, Error, unknown>(qc, options).mutate(variables)
/** What a screen reading the factory's query gets (fetched unless cached and fresh). */
const get = (qc: QueryClient, options: any): Promise<any> => qc.fetchQuery(options)
const getPages = (qc: QueryClient, options: any): Promise<any> => qc.fetchInfiniteQuery(options)

/** Keeps a query active, as a mounted screen does (invalidating it reads it again). */
function show(t: Test, qc: QueryClient, options: any) {
  const observer = new QueryObserver(qc, { ...options, refetchInterval: false })
  t.teardown(observer.subscribe(() => {}))
  return observer
}

const stale = (qc: QueryClient, queryKey: readonly unknown[]) => qc.getQueryState(queryKey)?.isInvalidated

async function until<T>(what: string, read: () => T | undefined | false, ms = 5000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = read()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** A frame switched on for pairing: the code it shows. */
async function frameCode(svc: TestApp): Promise<string> {
  const res = await appFetch(`${svc.url}/api/device/init`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ display: DEFAULT_DISPLAY, model: 'test-frame', firmware: '1.0.0' }),
  })
  return ((await res.json()) as { pinCode: string }).pinCode
}

/** A signed-up account and its browser's cookies; `confirmed`: its address confirmed from the e-mail. */
async function account(svc: TestApp, prefix: string, opts: { confirmed?: boolean } = {}) {
  const { client, jar } = makeClient(svc.url)
  const email = uniqueEmail(prefix)
  const { userId } = await signUp(client, email, PASSWORD)
  if (opts.confirmed) {
    const mail = await waitForMail(svc.dataDir, email, 'verify-email')
    await appFetch(mail.link as string, { redirect: 'manual' })
  }
  return { client, jar, email, userId }
}

const m = await consoleModules(t)
const { deviceKeys, deviceMutations, deviceQueries, invalidateForDeviceEvent } = m.devices
const { playlistKeys, playlistMutations, playlistQueries } = m.playlists
const adminEmail = uniqueEmail('dl-admin')
const svc = await startApp(t, {
  env: { ADMIN_EMAILS: adminEmail, LOCAL_PROVIDER_DURATION_MS: '50', GENERATION_POLL_BASE_MS: '50', GENERATION_TICK_MS: '50' },
})

t.test('each domain keys its queries under a root of its own', async (t) => {
  const roots = ['devices', 'playlists', 'credits', 'generation', 'notifications', 'account', 'admin', 'organizations'].map(
    (d) => (Object.values((m as any)[d]) as any[]).find((v) => Array.isArray(v?.all))?.all[0],
  )
  t.equal(new Set(roots).size, roots.length, `no two domains share a root: ${roots.join(', ')}`)
  t.same(
    deviceQueries.detail('a').queryKey.slice(0, deviceKeys.one('a').length),
    deviceKeys.one('a'),
    'a frame\u2019s queries are under its key',
  )
  t.same(deviceQueries.logs('a', { level: 'info', text: '', since: '' }).queryKey.slice(0, 4), deviceKeys.logs('a'))
})

t.test('a frame: paired, shown, renamed, refreshed by its live events, planned, deleted', async (t) => {
  const me = await account(svc, 'dl-frames')
  openPage(svc, me.jar)
  const qc = new QueryClient()
  const list = show(t, qc, deviceQueries.list())
  t.same(await until('the list', () => list.getCurrentResult().data), [], 'no frames yet')

  const paired = await run(qc, deviceMutations.pair(), { pinCode: await frameCode(svc), name: 'Kitchen', color: '#2b59c3' })
  const id: string = paired.device.id
  t.same(
    qc.getQueryData<any[]>(deviceKeys.list())?.map((d) => d.name),
    ['Kitchen'],
    'the list shown is read again before pairing answers (the page then opens the frame)',
  )

  t.match(await get(qc, deviceQueries.detail(id)), { id, name: 'Kitchen', color: '#2b59c3' })
  const events = await getPages(qc, deviceQueries.events(id))
  t.ok(
    events.pages[0].events.some((e: any) => e.type === 'device.paired'),
    'its event log has the pairing',
  )
  t.equal(await get(qc, deviceQueries.commandAck(id, 'no-such-command')), false, 'a command not acknowledged is not')

  const renamed = await run(qc, deviceMutations.rename(id), { name: 'Hall', color: '#112233' })
  t.equal(renamed.name, 'Hall')
  t.match(qc.getQueryData(deviceKeys.detail(id)), { name: 'Hall', color: '#112233' }, 'the frame shown is the answer, not read again')
  await until('the list to show the new name', () => qc.getQueryData<any[]>(deviceKeys.list())?.[0]?.name === 'Hall')
  t.pass('the list shown is read again')

  // What a live event refreshes, and what it leaves to its own polling.
  const logs = deviceQueries.logs(id, { level: 'debug', text: '', since: '' })
  await getPages(qc, logs)
  await get(qc, deviceQueries.firmware(id))
  t.same(await get(qc, deviceQueries.schedule(id)), null, 'no day plan is null, not an error')
  await invalidateForDeviceEvent(qc, id)
  t.ok(stale(qc, deviceKeys.detail(id)), 'a live event: the frame is read again')
  t.ok(stale(qc, deviceKeys.events(id)), 'and its event log')
  t.notOk(stale(qc, logs.queryKey), 'not its logs')
  t.notOk(stale(qc, deviceKeys.firmware(id)), 'nor its firmware')
  t.notOk(stale(qc, deviceKeys.schedule(id)), 'nor its day plan')

  const plan = { timeZone: 'UTC', rules: [], sleep: [{ from: '01:00', to: '05:00' }] }
  await run(qc, deviceMutations.saveSchedule(id), plan)
  t.match(qc.getQueryData(deviceKeys.schedule(id)), { timeZone: 'UTC', sleep: [{ from: '01:00', to: '05:00' }] }, 'the saved plan is shown')
  t.same(await get(qc, { ...deviceQueries.schedule(id), staleTime: 0 }), qc.getQueryData(deviceKeys.schedule(id)))
  await run(qc, deviceMutations.saveSchedule(id), null)
  t.equal(qc.getQueryData(deviceKeys.schedule(id)), null, 'a removed plan is none')

  await run(qc, deviceMutations.remove(id))
  t.same(qc.getQueryData(deviceKeys.list()), [], 'the list is read again before deleting answers (the page then leaves)')
  const gone = await get(qc, { ...deviceQueries.detail(id), retry: false }).catch((e: unknown) => e)
  t.match(gone, { status: 404, code: 'NOT_FOUND', message: String }, 'a refusal carries the service\u2019s status, code and words')
  t.ok(gone instanceof Error)
})

t.test('signed out, every query fails with 401 (the session gate signs the page out)', async (t) => {
  openPage(svc, new CookieJar())
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  const err = await get(qc, deviceQueries.list()).catch((e: unknown) => e)
  t.match(err, { status: 401, message: String })
  const { errorText } = m.api
  t.equal(errorText(err), (err as Error).message, 'the service\u2019s words are what a screen shows')
})

t.test('a playlist: created, filled, reordered at once, a refused order taken back, an item removed', async (t) => {
  const me = await account(svc, 'dl-playlists')
  openPage(svc, me.jar)
  const qc = new QueryClient()
  t.same(await get(qc, playlistQueries.list()), [])
  const created = await run(qc, playlistMutations.create(), { name: 'Mornings', mode: 'sequential', itemSeconds: 3600 })
  t.ok(stale(qc, playlistKeys.list()), 'the list is stale once one is created')
  const id: string = created.id

  const detail = show(t, qc, playlistQueries.detail(id))
  await until('the playlist', () => detail.getCurrentResult().data)
  await run(qc, playlistMutations.addPrompt(id), 'a red boat')
  const two = await run(qc, playlistMutations.addPrompt(id), 'a blue kite')
  t.equal(two.items.length, 2)
  t.same(qc.getQueryData(playlistKeys.detail(id)), two, 'each change answers the playlist, which is shown as it is')
  t.ok(stale(qc, playlistKeys.list()), 'and the list (its counts) is stale')

  const saved = two.items.map((i: any) => i.id)
  const seen: string[][] = []
  const stop = qc.getQueryCache().subscribe((e) => {
    if (e.query.queryHash === detail.getCurrentQuery().queryHash && e.type === 'updated' && e.action.type === 'success')
      seen.push((e.query.state.data as any).items.map((i: any) => i.id))
  })
  t.teardown(stop)
  const reversed = [...saved].reverse()
  await run(qc, playlistMutations.reorder(id), reversed)
  t.same(seen[0], reversed, 'the new order is shown before the service answers')
  t.same(
    (qc.getQueryData(playlistKeys.detail(id)) as any).items.map((i: any) => i.id),
    reversed,
    'and kept once it has',
  )

  seen.length = 0
  const refused = await run(qc, playlistMutations.reorder(id), [reversed[0], '00000000-0000-4000-8000-000000000000']).catch(
    (e: unknown) => e,
  )
  t.match(refused, { status: Number, message: String }, 'an order the service refuses fails with its words')
  t.ok((refused as any).status >= 400 && (refused as any).status < 500)
  await until('the saved order to come back', () => seen.length >= 2 && seen.at(-1)!.join() === reversed.join())
  t.not(seen[0]!.join(), reversed.join(), 'the refused order was shown at once')
  t.pass('and the saved one read again after the refusal')

  const one = await run(qc, playlistMutations.removeItem(id), reversed[0])
  t.same(
    one.items.map((i: any) => i.id),
    [reversed[1]],
  )
  t.same((qc.getQueryData(playlistKeys.detail(id)) as any).items.length, 1)
})

t.test('notification preferences: a switch saved is shown as saved', async (t) => {
  const me = await account(svc, 'dl-prefs')
  openPage(svc, me.jar)
  const qc = new QueryClient()
  const { notificationKeys, notificationMutations, notificationQueries } = m.notifications
  const before = await get(qc, notificationQueries.preferences())
  const after = await run(qc, notificationMutations.savePreferences(), { batteryLow: !before.batteryLow })
  t.equal(after.batteryLow, !before.batteryLow)
  t.same(qc.getQueryData(notificationKeys.preferences()), after, 'the answer is shown, not read again')
  t.notOk(stale(qc, notificationKeys.preferences()))
})

t.test('a picture generated: the job is followed under its key, the balance read again', async (t) => {
  const me = await account(svc, 'dl-generate')
  openPage(svc, me.jar)
  const qc = new QueryClient()
  const { creditKeys, creditQueries } = m.credits
  const { generationKeys, generationMutations, generationQueries } = m.generation
  const models = await get(qc, generationQueries.models())
  t.ok(
    models.some((x: any) => x.id === 'local'),
    'the local model is offered',
  )
  await get(qc, creditQueries.balance())
  const paired = await run(qc, deviceMutations.pair(), { pinCode: await frameCode(svc), name: 'Den', color: '#000000' })
  const job = await run(qc, generationMutations.start(), { prompt: { text: 'a lighthouse' }, deviceId: paired.device.id, model: 'local' })
  t.same(qc.getQueryData(generationKeys.job(job.id)), job, 'the job started is cached under its key')
  t.ok(stale(qc, creditKeys.balance()), 'the balance is read again (the price is taken at the start)')
  // As the frame's page follows it: the job read again under its key until it is done.
  let done = job
  for (let i = 0; i < 200 && (done.status === 'queued' || done.status === 'running'); i++) {
    await new Promise((r) => setTimeout(r, 50))
    done = await get(qc, generationQueries.job(job.id))
  }
  t.equal(done.status, 'succeeded')
  t.same(qc.getQueryData(generationKeys.job(job.id)), done)
})

t.test('your account: sessions and API keys, each change reading its list again', async (t) => {
  const me = await account(svc, 'dl-account')
  // A second sign-in: another browser.
  const other = makeClient(svc.url)
  await other.client.signIn.email({ email: me.email, password: PASSWORD })
  openPage(svc, me.jar)
  const qc = new QueryClient()
  const { accountKeys, accountMutations, accountQueries } = m.account
  t.equal((await get(qc, accountQueries.sessions())).length, 2)
  await run(qc, accountMutations.revokeOtherSessions())
  t.ok(stale(qc, accountKeys.sessions()), 'sessions are read again')
  t.equal((await get(qc, accountQueries.sessions())).length, 1, 'only this one is left')

  t.same(await get(qc, accountQueries.apiKeys()), [])
  const created = await run(qc, accountMutations.createApiKey(), 'home automation')
  t.type(created.key, 'string', 'the key itself is answered (shown once)')
  t.ok(stale(qc, accountKeys.apiKeys()))
  const keys = await get(qc, accountQueries.apiKeys())
  t.same(
    keys.map((k: any) => k.name),
    ['home automation'],
  )
  await run(qc, accountMutations.deleteApiKey(), keys[0].id)
  t.same(await get(qc, accountQueries.apiKeys()), [])
})

t.test('organizations: an invitation answered, the active one switched, the frames listed again', async (t) => {
  const owner = await account(svc, 'dl-owner')
  // Better Auth shows invitations only to a confirmed address.
  const guest = await account(svc, 'dl-guest', { confirmed: true })
  const org = (await owner.client.organization.create({ name: 'Acme', slug: `acme-${Date.now().toString(36)}` })).data!
  const invited = (await owner.client.organization.inviteMember({ email: guest.email, role: 'member', organizationId: org.id })).data!
  const { organizationKeys, organizationMutations, organizationQueries } = m.organizations
  openPage(svc, guest.jar)
  const qc = new QueryClient()
  const mine = await get(qc, organizationQueries.myInvitations())
  t.same(
    mine.filter((i: any) => i.status === 'pending').map((i: any) => i.id),
    [invited.id],
  )
  t.match(await get(qc, organizationQueries.invitation(invited.id)), { id: invited.id, status: 'pending', organizationId: org.id })
  await get(qc, deviceQueries.list())
  await run(qc, organizationMutations.answerInvitation(), { id: invited.id, accept: true, organizationId: org.id })
  t.ok(stale(qc, organizationKeys.myInvitations()), 'the invitations are read again')
  t.ok(stale(qc, organizationKeys.invitation(invited.id)), 'and the invitation')
  t.ok(stale(qc, deviceKeys.list()), 'and the frames (the new organization is the active one)')
  const after = await get(qc, organizationQueries.myInvitations())
  t.same(
    after.filter((i: any) => i.status === 'pending'),
    [],
    'none is left to answer',
  )

  await get(qc, { ...deviceQueries.list(), staleTime: Number.POSITIVE_INFINITY })
  await run(qc, organizationMutations.setActive(), null)
  t.ok(stale(qc, deviceKeys.list()), 'another active organization: the frames are read again')

  await get(qc, organizationQueries.teams(org.id))
  openPage(svc, owner.jar)
  await run(qc, organizationMutations.createTeam(org.id), 'Lobby')
  t.ok(stale(qc, organizationKeys.teams(org.id)), 'the teams are read again')
  t.ok(
    (await get(qc, organizationQueries.teams(org.id))).some((team: any) => team.name === 'Lobby'),
    'the new team is listed',
  )
})

t.test('administration: a ban reads every search of users again; acting as someone drops the cache', async (t) => {
  await signUpAdmin(svc, adminEmail)
  const { client, jar } = makeClient(svc.url)
  await client.signIn.email({ email: adminEmail, password: PASSWORD })
  const target = await account(svc, 'dl-banned')
  openPage(svc, jar)
  const qc = new QueryClient()
  const { adminKeys, adminMutations, adminQueries } = m.admin
  const found = await get(qc, adminQueries.users(target.email))
  t.same(
    found.users.map((u: any) => u.email),
    [target.email],
    'a search finds the user',
  )
  await get(qc, adminQueries.users(''))
  await run(qc, adminMutations.ban(), target.userId)
  t.ok(stale(qc, adminKeys.userSearch(target.email)), 'the search is read again')
  t.ok(stale(qc, adminKeys.userSearch('')), 'and every other')
  t.match(await get(qc, adminQueries.users(target.email)), { users: [{ banned: true }] })
  await run(qc, adminMutations.unban(), target.userId)

  const { creditMutations } = m.credits
  t.match(await run(qc, creditMutations.grant(target.userId), { amount: '5' }), { balance: String })

  await run(qc, adminMutations.impersonate(), target.userId)
  t.equal(qc.getQueryCache().getAll().length, 0, 'nothing cached as the administrator is left')
})
