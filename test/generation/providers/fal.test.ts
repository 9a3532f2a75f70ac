// The fal provider against a local server speaking the fal queue API.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import type { GenerationInput, ProviderJob, StartResult } from '../../../src/generation/provider.js'
import { createFalProvider } from '../../../src/generation/providers/fal.js'
import {
  download,
  json,
  PNG,
  png,
  providerError,
  silence,
  startFakeServer,
  until,
  type FakeServer,
  type Recorded,
} from '../../helpers/provider-server.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const KEY = 'fal-key-id:fal-key-secret'

const input: GenerationInput = {
  prompt: 'a fox in the snow, woodcut',
  negativePrompt: 'blurry',
  width: 800,
  height: 480,
  model: 'fal-ai/flux/dev',
  seed: 77,
}

type Ending = { kind: 'images' } | { kind: 'status-error'; error: string } | { kind: 'response-error'; status: number; detail: unknown }

/**
 * A fal-shaped queue: requests live under the app id (fal-ai/flux), each goes IN_QUEUE →
 * IN_PROGRESS → COMPLETED, and the result is fetched from the response URL.
 * `urlHost` lets a test make the server hand out URLs on another host.
 */
async function falServer(t: Test, ending: Ending, urlHost?: () => string) {
  const polls = new Map<string, number>()
  let fake!: FakeServer
  const root = (id: string) => `${urlHost ? urlHost() : fake.url}/fal-ai/flux/requests/${id}`
  fake = await startFakeServer(t, (req: Recorded, res: ServerResponse) => {
    if (req.method === 'GET' && req.path.startsWith('/files/')) return png(res)
    if (req.headers.authorization !== `Key ${KEY}`) return json(res, 401, { detail: 'No user found for Key ID and Secret' })
    if (req.method === 'POST' && req.path === '/fal-ai/flux/dev') {
      const id = `req-${fake.requests.length}`
      return json(res, 200, {
        request_id: id,
        response_url: root(id),
        status_url: `${root(id)}/status`,
        cancel_url: `${root(id)}/cancel`,
        queue_position: 0,
      })
    }
    const m = /^\/fal-ai\/flux\/requests\/([\w-]+)(\/status|\/cancel)?$/.exec(req.path)
    if (!m) return json(res, 404, { detail: 'Not Found' })
    const id = m[1]!
    if (m[2] === '/cancel' && req.method === 'PUT') {
      if ((polls.get(id) ?? 0) >= 3) return json(res, 400, { status: 'ALREADY_COMPLETED' })
      return json(res, 202, { status: 'CANCELLATION_REQUESTED' })
    }
    if (m[2] === '/status' && req.method === 'GET') {
      const n = polls.get(id) ?? 0
      polls.set(id, n + 1)
      const response_url = root(id)
      if (n === 0) return json(res, 202, { status: 'IN_QUEUE', queue_position: 2, response_url })
      if (n === 1) return json(res, 202, { status: 'IN_PROGRESS', response_url, logs: null })
      if (ending.kind === 'status-error')
        return json(res, 200, {
          status: 'COMPLETED',
          response_url,
          logs: null,
          metrics: {},
          error: ending.error,
          error_type: 'runner_error',
        })
      return json(res, 200, { status: 'COMPLETED', response_url, logs: null, metrics: { inference_time: 1.2 } })
    }
    if (!m[2] && req.method === 'GET') {
      if (ending.kind === 'response-error') return json(res, ending.status, { detail: ending.detail })
      return json(res, 200, {
        images: [{ url: `${fake.url}/files/${id}.png`, width: 800, height: 480, content_type: 'image/png' }],
        timings: { inference: 1.2 },
        seed: input.seed,
        has_nsfw_concepts: [false],
        prompt: input.prompt,
      })
    }
    return json(res, 405, { detail: 'Method Not Allowed' })
  })
  return fake
}

const job = (s: StartResult): ProviderJob => ({ providerJobId: s.providerJobId, state: s.state ?? {}, input })

t.test('a queued request goes IN_QUEUE → IN_PROGRESS → COMPLETED and its result URLs serve the image', async (t) => {
  const fake = await falServer(t, { kind: 'images' })
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  t.equal(provider.name, 'fal')

  const started = await provider.start(input)
  const submit = fake.requests[0]!
  t.equal(submit.method, 'POST')
  t.equal(submit.path, '/fal-ai/flux/dev')
  t.equal(submit.headers.authorization, `Key ${KEY}`)
  t.same(submit.body, { prompt: input.prompt, negative_prompt: 'blurry', image_size: { width: 800, height: 480 }, seed: 77 })
  t.equal(started.providerJobId, 'req-1')
  t.same(
    started.state,
    {
      statusUrl: `${fake.url}/fal-ai/flux/requests/req-1/status`,
      responseUrl: `${fake.url}/fal-ai/flux/requests/req-1`,
      cancelUrl: `${fake.url}/fal-ai/flux/requests/req-1/cancel`,
    },
    'the URLs fal returned are kept in the job state',
  )

  const j = job(started)
  t.same(await provider.poll(j), { status: 'queued' })
  t.same(await provider.poll(j), { status: 'running' })
  const done = await provider.poll(j)
  t.same(done, { status: 'succeeded', outputs: [{ url: `${fake.url}/files/req-1.png` }] })
  t.same(
    fake.requests.slice(1).map((r) => `${r.method} ${r.path}`),
    [
      'GET /fal-ai/flux/requests/req-1/status',
      'GET /fal-ai/flux/requests/req-1/status',
      'GET /fal-ai/flux/requests/req-1/status',
      'GET /fal-ai/flux/requests/req-1',
    ],
    'status polled, then the result fetched from the response URL',
  )
  t.ok(fake.requests.slice(1).every((r) => r.headers.authorization === `Key ${KEY}`))

  const image = await download(`${fake.url}/files/req-1.png`)
  t.equal(image.contentType, 'image/png')
  t.ok(image.bytes.equals(PNG))
})

t.test('a COMPLETED status with an error is a failed job with fal error text', async (t) => {
  const fake = await falServer(t, { kind: 'status-error', error: 'Internal Server Error: CUDA error: out of memory' })
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const j = job(await provider.start(input))
  await provider.poll(j)
  await provider.poll(j)
  t.same(await provider.poll(j), {
    status: 'failed',
    error: { code: 'PROVIDER_FAILED', message: 'fal: Internal Server Error: CUDA error: out of memory' },
  })
})

t.test('a result answering with a detail is a failed job', async (t) => {
  const fake = await falServer(t, {
    kind: 'response-error',
    status: 422,
    detail: [{ loc: ['body', 'image_size'], msg: 'Input should be a valid dictionary', type: 'model_attributes_type' }],
  })
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const j = job(await provider.start(input))
  await provider.poll(j)
  await provider.poll(j)
  t.same(await provider.poll(j), {
    status: 'failed',
    error: { code: 'PROVIDER_FAILED', message: 'fal: body.image_size: Input should be a valid dictionary' },
  })
})

t.test('URLs fal hands out on another host are never followed (the key stays home)', async (t) => {
  const elsewhere = await startFakeServer(t, (_req, res) => json(res, 200, { status: 'COMPLETED' }))
  const fake = await falServer(t, { kind: 'images' }, () => elsewhere.url)
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const started = await provider.start(input)
  t.equal(
    (started.state as { statusUrl: string }).statusUrl,
    `${elsewhere.url}/fal-ai/flux/requests/req-1/status`,
    'the foreign URL as handed out',
  )
  const j = job(started)
  t.same(await provider.poll(j), { status: 'queued' })
  t.same(await provider.poll(j), { status: 'running' })
  t.same(await provider.poll(j), { status: 'succeeded', outputs: [{ url: `${fake.url}/files/req-1.png` }] })
  await provider.cancel(j)
  t.equal(elsewhere.requests.length, 0, 'the other host saw no request')
  t.same(
    fake.requests.slice(1).map((r) => r.path),
    [
      '/fal-ai/flux/requests/req-1/status',
      '/fal-ai/flux/requests/req-1/status',
      '/fal-ai/flux/requests/req-1/status',
      '/fal-ai/flux/requests/req-1',
      '/fal-ai/flux/requests/req-1/cancel',
    ],
    'the documented URLs on the configured base were used instead',
  )
})

t.test('HTTP errors map to retryable or final ProviderErrors', async (t) => {
  const fake = await falServer(t, { kind: 'images' })
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const started = await provider.start(input)

  fake.override = (_req, res) => json(res, 429, { detail: 'Too many requests' }, { 'retry-after': '3' })
  let err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_RATE_LIMITED')
  t.equal(err.retryable, true)
  t.equal(err.retryAfterMs, 3000)

  fake.override = (_req, res) => json(res, 502, { detail: 'Bad Gateway' })
  err = await providerError(() => provider.poll(job(started)))
  t.equal(err.code, 'PROVIDER_UNAVAILABLE')
  t.equal(err.retryable, true)

  fake.override = null
  err = await providerError(() => createFalProvider({ key: 'wrong:key', baseUrl: fake.url }).start(input))
  t.equal(err.code, 'PROVIDER_AUTH')
  t.equal(err.retryable, false)
  t.match(err.message, /No user found/)

  fake.override = (_req, res) => json(res, 422, { detail: [{ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' }] })
  err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_REJECTED')
  t.equal(err.retryable, false)
  t.match(err.message, /body\.prompt: Field required/)
})

t.test('a server that never answers times out as a retryable error', async (t) => {
  const fake = await falServer(t, { kind: 'images' })
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 150 })
  const started = await provider.start(input)
  fake.override = silence
  const err = await providerError(() => provider.poll(job(started)))
  t.equal(err.code, 'PROVIDER_TIMEOUT')
  t.equal(err.retryable, true)
  await until(() => fake.requests.at(-1)!.closedEarly)
  t.equal(fake.requests.at(-1)!.path, '/fal-ai/flux/requests/req-1/status')
})

t.test('cancel PUTs the cancel URL', async (t) => {
  const fake = await falServer(t, { kind: 'images' })
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const j = job(await provider.start(input))
  t.same(await provider.poll(j), { status: 'queued' })
  await provider.cancel(j)
  const call = fake.requests.at(-1)!
  t.equal(call.method, 'PUT')
  t.equal(call.path, '/fal-ai/flux/requests/req-1/cancel')
  t.equal(call.headers.authorization, `Key ${KEY}`)
  t.equal(call.body, undefined, 'no body')
})

t.test('cancelling a request that already completed is not an error', async (t) => {
  const fake = await falServer(t, { kind: 'images' })
  const provider = createFalProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const j = job(await provider.start(input))
  await provider.poll(j)
  await provider.poll(j)
  t.equal((await provider.poll(j)).status, 'succeeded')
  await provider.cancel(j)
  t.equal(fake.requests.at(-1)!.method, 'PUT')
  t.equal(fake.requests.at(-1)!.path, '/fal-ai/flux/requests/req-1/cancel', 'the server was asked and said ALREADY_COMPLETED')
})
