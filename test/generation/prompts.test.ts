// Prompts and generation as their users meet them: templates, prompt pages that skip nothing,
// who may send to a device (owner, organization admin; a member reads; nobody else), nothing
// stored or published for a refused request, the local provider's stages, determinism and
// failure injection, inline image bytes and the image Event, ETag revalidation of image URLs.
import t from 'tap'
import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { createLocalProvider } from '../../src/generation/providers/local.js'
import { seedFor } from '../../src/generation/providers/local.js'
import { event } from '../../src/events/tables.js'
import { appFetch } from '../helpers/app-fetch.js'

let svc: TestApp

t.before(async () => {
  svc = await startApp(t, {
    env: {
      DEVICE_POLL_INTERVAL: '0',
      LOCAL_PROVIDER_DURATION_MS: '150',
      GENERATION_POLL_BASE_MS: '50',
      GENERATION_TICK_MS: '50',
      // A paid model the tests never reach: every request for it is refused before the provider.
      REPLICATE_API_TOKEN: 'r8_never_used',
      REPLICATE_BASE_URL: 'http://127.0.0.1:9',
    },
  })
})

const hdr = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })
async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  token?: string,
  body?: unknown,
): Promise<{ status: number; body: T & { code?: string } }> {
  const res = await appFetch(`${svc.url}${path}`, {
    method,
    headers: token ? hdr(token) : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T & { code?: string } }
}
const person = async (prefix: string) => signUp(makeClient(svc.url).client, uniqueEmail(prefix))

t.test('templates are listed and usable by name', async (t) => {
  const { token } = await person('templates')
  const list = await call<{ templates: Array<{ name: string; title: string; template: string }> }>('GET', '/api/prompts/templates', token)
  t.equal(list.status, 200)
  t.ok(list.body.templates.length >= 3, `${list.body.templates.length} templates`)
  const lineArt = list.body.templates.find((x) => x.name === 'line-art')
  t.ok(lineArt, 'line-art is one of them')
  for (const tpl of list.body.templates) {
    const created = await call<{ text: string; style: string | null }>('POST', '/api/prompts', token, {
      text: 'a harbour',
      template: tpl.name,
    })
    t.equal(created.status, 201, `template ${tpl.name}`)
    t.match(created.body.text, /a harbour/, 'the subject is inside the template')
    t.not(created.body.text, 'a harbour', 'and the template added to it')
  }
  const unknown = await call('POST', '/api/prompts', token, { text: 'x', template: 'no-such-template' })
  t.equal(unknown.status, 400)
})

t.test("a device's prompts page newest first without skipping any", async (t) => {
  const { token } = await person('pages')
  const dev = await pairDevice(svc, token)
  const made: string[] = []
  for (let i = 0; i < 7; i++)
    made.push((await call<{ id: string }>('POST', '/api/prompts', token, { text: `prompt ${i}`, deviceId: dev.deviceId })).body.id)
  const walked: string[] = []
  let cursor: string | null = null
  do {
    const page: { status: number; body: { prompts: Array<{ id: string }>; nextCursor: string | null } } = await call(
      'GET',
      `/api/prompts/device/${dev.deviceId}?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      token,
    )
    t.equal(page.status, 200)
    walked.push(...page.body.prompts.map((p) => p.id))
    cursor = page.body.nextCursor
  } while (cursor)
  t.same(walked, [...made].reverse(), 'every prompt once, newest first')
  t.equal((await call('GET', `/api/prompts/device/${dev.deviceId}?cursor=garbage`, token)).body.code, 'INVALID_CURSOR')
})

t.test('who may send to a device: owner and organization admin; a member reads; strangers see nothing', async (t) => {
  const owner = await person('org-owner')
  const member = await person('org-member')
  const admin = await person('org-admin')
  const stranger = await person('stranger')
  const org = await call<{ id: string }>('POST', '/api/auth/organization/create', owner.token, {
    name: 'Prompt Org',
    slug: `prompt-org-${Date.now()}`,
  })
  t.equal(org.status, 200)
  await svc.app.auth.api.addMember({ body: { userId: member.userId, organizationId: org.body.id, role: 'member' } })
  await svc.app.auth.api.addMember({ body: { userId: admin.userId, organizationId: org.body.id, role: 'admin' } })
  const dev = await pairDevice(svc, owner.token, { organizationId: org.body.id })
  const own = await call<{ id: string }>('POST', '/api/prompts', owner.token, { text: 'by the owner', deviceId: dev.deviceId })
  t.equal(own.status, 201)

  t.equal(
    (await call('POST', '/api/prompts', admin.token, { text: 'by an admin', deviceId: dev.deviceId })).status,
    201,
    'an organization admin sends prompts',
  )
  t.equal(
    (await call('POST', '/api/generate', admin.token, { prompt: { text: 'admin image' }, deviceId: dev.deviceId })).status,
    202,
    'and generates for it',
  )
  const read = await call<{ prompts: unknown[] }>('GET', `/api/prompts/device/${dev.deviceId}`, member.token)
  t.equal(read.status, 200, 'a member reads its prompts')
  t.equal(read.body.prompts.length, 3, "the owner's, the admin's and the one the admin's generation stored")
  t.equal(
    (await call('POST', '/api/prompts', member.token, { text: 'by a member', deviceId: dev.deviceId })).status,
    403,
    'but may not send one',
  )
  t.equal(
    (await call('POST', '/api/generate', member.token, { prompt: { text: 'member image' }, deviceId: dev.deviceId })).status,
    403,
    'nor generate for it',
  )
  for (const [what, res] of [
    ['list', await call('GET', `/api/prompts/device/${dev.deviceId}`, stranger.token)],
    ['create', await call('POST', '/api/prompts', stranger.token, { text: 'intruder', deviceId: dev.deviceId })],
    ['generate', await call('POST', '/api/generate', stranger.token, { prompt: { text: 'intruder' }, deviceId: dev.deviceId })],
  ] as const) {
    t.equal(res.status, 404, `a stranger's ${what}: the device does not exist for them`)
    t.equal(res.body.code, 'DEVICE_NOT_FOUND')
  }

  // The admin's stored prompt stops working for them once they are only a member.
  const adminsPrompt = await call<{ id: string }>('POST', '/api/prompts', admin.token, { text: 'for later', deviceId: dev.deviceId })
  await svc.app.auth.api.updateMemberRole({
    body: { memberId: (await memberId(org.body.id, admin.userId))!, role: 'member', organizationId: org.body.id },
    headers: new Headers({ authorization: `Bearer ${owner.token}` }),
  })
  const later = await call('POST', '/api/generate', admin.token, { promptId: adminsPrompt.body.id })
  t.equal(later.status, 403, "a stored prompt's device is checked again when it is used")
})

async function memberId(organizationId: string, userId: string) {
  const { member } = await import('../../src/db/schema.js')
  const { and } = await import('drizzle-orm')
  const [row] = await svc.app.database.db
    .select()
    .from(member)
    .where(and(eq(member.organizationId, organizationId), eq(member.userId, userId)))
  return row?.id
}

t.test('a refused generation stores and publishes nothing', async (t) => {
  const { token } = await person('refused')
  const dev = await pairDevice(svc, token)
  const c = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
  t.teardown(() => close(c))
  await subscribe(c, dev.topics.prompt!)
  const firstPrompt = nextMessage<{ text: string }>(c, dev.topics.prompt!)
  const poor = await call('POST', '/api/generate', token, {
    prompt: { text: 'too expensive' },
    model: 'flux-schnell',
    deviceId: dev.deviceId,
  })
  t.equal(poor.status, 402)
  t.equal(poor.body.code, 'INSUFFICIENT_BALANCE')
  const unknown = await call('POST', '/api/generate', token, { prompt: { text: 'no such model' }, model: 'nope-1', deviceId: dev.deviceId })
  t.equal(unknown.status, 400)
  t.equal(
    (await call<{ prompts: unknown[] }>('GET', `/api/prompts/device/${dev.deviceId}`, token)).body.prompts.length,
    0,
    'no prompt was stored',
  )
  await call('POST', '/api/prompts', token, { text: 'the first real one', deviceId: dev.deviceId })
  t.equal((await firstPrompt).payload.text, 'the first real one', 'the device saw no prompt before it')
})

t.test('the local provider: queued, running, done; the same prompt draws the same picture; !fail fails', async (t) => {
  const provider = createLocalProvider({ durationMs: 300 })
  const input = { prompt: 'a quiet lake', width: 64, height: 48, model: 'local', seed: seedFor('a quiet lake\n') }
  const started = await provider.start(input)
  const job = { providerJobId: started.providerJobId, state: started.state ?? {}, input }
  const seen: string[] = []
  let result = await provider.poll(job)
  while (result.status !== 'succeeded' && result.status !== 'failed') {
    if (seen.at(-1) !== result.status) seen.push(result.status)
    await new Promise((r) => setTimeout(r, 20))
    result = await provider.poll(job)
  }
  seen.push(result.status)
  t.same(seen, ['queued', 'running', 'succeeded'], 'it walks through every stage')
  const first = result.status === 'succeeded' && 'data' in result.outputs[0]! ? result.outputs[0].data : Buffer.alloc(0)
  const again = await provider.poll(job)
  const second = again.status === 'succeeded' && 'data' in again.outputs[0]! ? again.outputs[0].data : Buffer.alloc(0)
  t.ok(first.length > 0)
  t.equal(createHash('sha256').update(first).digest('hex'), createHash('sha256').update(second).digest('hex'), 'deterministic')
  const other = await provider.poll({ ...job, input: { ...input, prompt: 'a loud city', seed: seedFor('a loud city\n') } })
  const otherBytes = other.status === 'succeeded' && 'data' in other.outputs[0]! ? other.outputs[0].data : Buffer.alloc(0)
  t.not(
    createHash('sha256').update(otherBytes).digest('hex'),
    createHash('sha256').update(first).digest('hex'),
    'another prompt, another picture',
  )
  const failing = await provider.poll({ ...job, input: { ...input, prompt: '!fail please' } })
  t.same(failing, { status: 'failed', error: { code: 'LOCAL_INJECTED_FAILURE', message: 'failure injected by the prompt' } })
})

t.test('small images travel inline when the display asks; each delivery is an Event; image URLs revalidate', async (t) => {
  const { token, userId } = await person('inline')
  // pairDevice has no inline switch: init with it directly.
  const init = await call<{ deviceId: string; deviceCode: string; pinCode: string }>('POST', '/api/device/init', undefined, {
    display: { width: 200, height: 120, palette: 'bw', inline: true },
    model: 'tiny',
  })
  await call('POST', '/api/device/validate', token, { pinCode: init.body.pinCode, name: 'Tiny' })
  const creds = (
    await call<{ credentials: { password: string } }>('POST', '/api/device/get-init-device', undefined, {
      deviceId: init.body.deviceId,
      deviceCode: init.body.deviceCode,
    })
  ).body.credentials
  const id = init.body.deviceId
  const c = await connect(mqttUrl(svc), { clientId: id, username: id, password: creds.password })
  t.teardown(() => close(c))
  await subscribe(c, `devices/${id}/image`)
  const arrives = nextMessage<{ imageId: string; url: string; bytes: number; sha256: string; data?: string }>(
    c,
    `devices/${id}/image`,
    20_000,
  )
  const job = await call<{ id: string }>('POST', '/api/generate', token, { prompt: { text: 'a tiny boat' }, deviceId: id })
  t.equal(job.status, 202)
  const msg = (await arrives).payload
  t.type(msg.data, 'string', 'the bytes are in the message')
  const inline = Buffer.from(msg.data!, 'base64')
  t.equal(inline.length, msg.bytes)
  t.equal(createHash('sha256').update(inline).digest('hex'), msg.sha256, 'and match its digest')
  const served = await appFetch(msg.url)
  const etag = served.headers.get('etag')
  t.equal(Buffer.compare(Buffer.from(await served.arrayBuffer()), inline), 0, 'the URL serves the same bytes')
  t.equal(etag, `"${msg.sha256}"`, 'the ETag is the digest')
  const revalidated = await appFetch(msg.url, { headers: { 'if-none-match': etag! } })
  t.equal(revalidated.status, 304, 'a cached copy is confirmed without the bytes')
  const original = await appFetch(msg.url.replace(/\/[^/]+$/, '/original'))
  t.equal(original.status, 200)
  t.equal(original.headers.get('content-type'), 'image/png', 'the original as the provider made it')
  t.equal((await appFetch(msg.url.replace(/\/[^/]+$/, '/png-spectra6'))).status, 404, 'a format this display was not sent does not exist')
  const events = await eventually(async () => {
    const rows = await svc.app.database.db.select().from(event).where(eq(event.deviceId, id))
    return rows.some((e) => e.type === 'device.image') ? rows : null
  })
  const delivered = events.find((e) => e.type === 'device.image')!
  t.equal(delivered.userId, userId)
  t.equal(delivered.data.imageId, msg.imageId)
  t.equal(delivered.data.jobId, job.body.id)
})
