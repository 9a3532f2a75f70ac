// The Replicate provider against a local server speaking the predictions API.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import type { GenerationInput, ProviderJob } from '../../../src/generation/provider.js'
import { createReplicateProvider, progressFromLogs } from '../../../src/generation/providers/replicate.js'
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

const TOKEN = 'r8_test-token-secret'

const input: GenerationInput = {
  prompt: 'a lighthouse at dusk',
  negativePrompt: 'text, watermark',
  width: 800,
  height: 480,
  model: 'black-forest-labs/flux-schnell',
  seed: 424242,
}

/** A Replicate-shaped server: each prediction walks starting → processing → the given ending. */
async function replicateServer(t: Test, ending: (id: string, url: string) => Record<string, unknown>) {
  const polls = new Map<string, number>()
  let fake!: FakeServer
  const prediction = (id: string, status: string, extra: Record<string, unknown> = {}) => ({
    id,
    model: input.model,
    version: 'dp-4d0bcc0acd5c4b34b7ad8c2c4d8f0bd4',
    status,
    input: {},
    logs: '',
    output: null,
    error: null,
    created_at: '2025-01-01T00:00:00.000Z',
    urls: { get: `${fake.url}/v1/predictions/${id}`, cancel: `${fake.url}/v1/predictions/${id}/cancel` },
    ...extra,
  })
  fake = await startFakeServer(t, (req: Recorded, res: ServerResponse) => {
    // Output files are public (replicate.delivery), the API is not.
    if (req.method === 'GET' && req.path.startsWith('/files/')) return png(res)
    if (req.headers.authorization !== `Bearer ${TOKEN}`)
      return json(res, 401, { title: 'Unauthenticated', detail: 'You did not pass a valid authentication token', status: 401 })
    if (req.method === 'POST' && (req.path === `/v1/models/${input.model}/predictions` || req.path === '/v1/predictions')) {
      return json(res, 201, prediction(`p-${fake.requests.length}`, 'starting'))
    }
    const cancel = /^\/v1\/predictions\/([\w-]+)\/cancel$/.exec(req.path)
    if (req.method === 'POST' && cancel) {
      polls.set(cancel[1]!, -1)
      return json(res, 200, prediction(cancel[1]!, 'canceled'))
    }
    const get = /^\/v1\/predictions\/([\w-]+)$/.exec(req.path)
    if (req.method === 'GET' && get) {
      const id = get[1]!
      const n = polls.get(id) ?? 0
      if (n === -1) return json(res, 200, prediction(id, 'canceled'))
      polls.set(id, n + 1)
      if (n === 0) return json(res, 200, prediction(id, 'starting'))
      if (n === 1)
        return json(
          res,
          200,
          prediction(id, 'processing', {
            logs: 'Using seed: 424242\n  0%|          | 0/4 [00:00<?, ?it/s]\n 50%|█████     | 2/4 [00:00<00:00,  3.1it/s]',
          }),
        )
      return json(res, 200, prediction(id, 'unused', ending(id, fake.url)))
    }
    return json(res, 404, { detail: 'Not found.', status: 404 })
  })
  return fake
}

const job = (providerJobId: string, state: Record<string, unknown> = {}, inp = input): ProviderJob => ({ providerJobId, state, input: inp })

t.test('a prediction goes starting → processing → succeeded, with output URLs that serve the image', async (t) => {
  const fake = await replicateServer(t, (id, url) => ({ status: 'succeeded', output: [`${url}/files/${id}-0.png`] }))
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: `${fake.url}/`, timeoutMs: 5000 })
  t.equal(provider.name, 'replicate')

  const started = await provider.start(input)
  const create = fake.requests[0]!
  t.equal(create.method, 'POST')
  t.equal(create.path, '/v1/models/black-forest-labs/flux-schnell/predictions', 'the model endpoint, not the versioned one')
  t.equal(create.headers.authorization, `Bearer ${TOKEN}`)
  t.same(create.body, {
    input: {
      prompt: input.prompt,
      negative_prompt: 'text, watermark',
      aspect_ratio: '16:9',
      width: 800,
      height: 480,
      seed: 424242,
      output_format: 'png',
    },
  })
  t.equal(started.providerJobId, 'p-1', 'the prediction id is the provider job id')

  const j = job(started.providerJobId, started.state)
  t.same(await provider.poll(j), { status: 'queued' }, 'starting is queued')
  t.same(await provider.poll(j), { status: 'running', progress: 50 }, 'processing is running, progress from the logs')
  const done = await provider.poll(j)
  t.equal(done.status, 'succeeded')
  const outputs = done.status === 'succeeded' ? done.outputs : []
  t.same(outputs, [{ url: `${fake.url}/files/p-1-0.png` }])
  const polls = fake.requests.filter((r) => r.method === 'GET')
  t.same(
    polls.map((r) => r.path),
    ['/v1/predictions/p-1', '/v1/predictions/p-1', '/v1/predictions/p-1'],
  )
  t.ok(
    polls.every((r) => r.headers.authorization === `Bearer ${TOKEN}`),
    'every poll is authenticated',
  )

  const image = await download((outputs[0] as { url: string }).url)
  t.equal(image.contentType, 'image/png')
  t.ok(image.bytes.equals(PNG), 'the output URL serves the image')
})

t.test('a pinned version goes through /v1/predictions; a single output URL is accepted', async (t) => {
  const fake = await replicateServer(t, (id, url) => ({ status: 'succeeded', output: `${url}/files/${id}.png` }))
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: fake.url, timeoutMs: 5000 })
  const pinned = {
    ...input,
    model: 'stability-ai/sdxl:7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc',
    negativePrompt: undefined,
  }
  const started = await provider.start(pinned)
  t.equal(fake.requests[0]!.path, '/v1/predictions')
  t.same(
    fake.requests[0]!.body,
    {
      version: '7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc',
      input: { prompt: input.prompt, aspect_ratio: '16:9', width: 800, height: 480, seed: 424242, output_format: 'png' },
    },
    'no negative_prompt when there is none',
  )
  const j = job(started.providerJobId, started.state, pinned)
  await provider.poll(j)
  await provider.poll(j)
  t.same(await provider.poll(j), { status: 'succeeded', outputs: [{ url: `${fake.url}/files/${started.providerJobId}.png` }] })
})

t.test('a failed prediction is a failed job carrying Replicate error text', async (t) => {
  const fake = await replicateServer(t, () => ({ status: 'failed', error: 'CUDA out of memory. Tried to allocate 2.00 GiB' }))
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: fake.url, timeoutMs: 5000 })
  const started = await provider.start(input)
  const j = job(started.providerJobId)
  await provider.poll(j)
  await provider.poll(j)
  const r = await provider.poll(j)
  t.same(r, { status: 'failed', error: { code: 'PROVIDER_FAILED', message: 'replicate: CUDA out of memory. Tried to allocate 2.00 GiB' } })
})

t.test('an NSFW failure is reported as moderated', async (t) => {
  const fake = await replicateServer(t, () => ({
    status: 'failed',
    error: 'NSFW content detected. Try running it again, or try a different prompt.',
  }))
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: fake.url, timeoutMs: 5000 })
  const j = job((await provider.start(input)).providerJobId)
  await provider.poll(j)
  await provider.poll(j)
  const r = await provider.poll(j)
  t.equal(r.status === 'failed' && r.error.code, 'MODERATED')
})

t.test('HTTP errors map to retryable or final ProviderErrors, without the token', async (t) => {
  const fake = await replicateServer(t, () => ({ status: 'succeeded', output: [] }))
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: fake.url, timeoutMs: 5000 })

  fake.override = (_req, res) =>
    json(
      res,
      429,
      { title: 'Request was throttled.', detail: 'Request was throttled. Expected available in 7 seconds.', status: 429 },
      { 'retry-after': '7' },
    )
  let err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_RATE_LIMITED')
  t.equal(err.retryable, true)
  t.equal(err.retryAfterMs, 7000, 'Retry-After in seconds becomes milliseconds')
  t.equal(err.httpStatus, 429)
  t.match(err.message, /throttled/)

  fake.override = (_req, res) => json(res, 503, { detail: 'Service Unavailable' })
  err = await providerError(() => provider.poll(job('p-x')))
  t.equal(err.code, 'PROVIDER_UNAVAILABLE')
  t.equal(err.retryable, true, '5xx is retried')

  fake.override = null
  const wrong = createReplicateProvider({ token: 'r8_wrong', baseUrl: fake.url, timeoutMs: 5000 })
  err = await providerError(() => wrong.start(input))
  t.equal(err.code, 'PROVIDER_AUTH')
  t.equal(err.retryable, false, '401 is final')

  // A provider that echoes the key in its error must not get it into our messages.
  fake.override = (req, res) => json(res, 403, { detail: `token ${String(req.headers.authorization).slice(7)} may not run this model` })
  err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_AUTH')
  t.notMatch(err.message, TOKEN)
  t.match(err.message, /\[redacted\] may not run this model/)

  fake.override = (_req, res) =>
    json(res, 422, { title: 'Input validation failed', detail: '- input.width: Must be less than or equal to 1440', status: 422 })
  err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_REJECTED')
  t.equal(err.retryable, false)
  t.match(err.message, /input\.width: Must be less than or equal to 1440/)
})

t.test('a server that never answers times out as a retryable error', async (t) => {
  const fake = await replicateServer(t, () => ({}))
  fake.override = silence
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: fake.url, timeoutMs: 150 })
  let err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_TIMEOUT')
  t.equal(err.retryable, true)
  t.match(err.message, /150 ms/)
  err = await providerError(() => provider.poll(job('p-1')))
  t.equal(err.code, 'PROVIDER_TIMEOUT')
  await until(() => fake.requests.every((r) => r.closedEarly))
  t.equal(fake.requests.length, 2, 'both requests were made, and abandoned unanswered')
})

t.test('a caller abort (shutdown) is retryable, so the job resumes later', async (t) => {
  const fake = await replicateServer(t, () => ({}))
  fake.override = silence
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: fake.url, timeoutMs: 60_000 })
  const ac = new AbortController()
  const pending = providerError(() => provider.poll(job('p-1'), ac.signal))
  await until(() => fake.requests.length === 1)
  ac.abort()
  const err = await pending
  t.equal(err.code, 'PROVIDER_ABORTED')
  t.equal(err.retryable, true)
})

t.test('cancel posts to the prediction cancel endpoint; the prediction then reads canceled', async (t) => {
  const fake = await replicateServer(t, () => ({ status: 'succeeded', output: [] }))
  const provider = createReplicateProvider({ token: TOKEN, baseUrl: fake.url, timeoutMs: 5000 })
  const j = job((await provider.start(input)).providerJobId)
  t.same(await provider.poll(j), { status: 'queued' })
  await provider.cancel(j)
  const call = fake.requests.at(-1)!
  t.equal(call.method, 'POST')
  t.equal(call.path, `/v1/predictions/${j.providerJobId}/cancel`)
  t.equal(call.headers.authorization, `Bearer ${TOKEN}`)
  t.same(await provider.poll(j), { status: 'canceled' })
})

t.test('progress is read from tqdm-style logs', async (t) => {
  t.equal(progressFromLogs(' 25%|██▌       | 1/4\n 75%|███████▌  | 3/4'), 75)
  t.equal(progressFromLogs('Using seed: 1'), undefined)
  t.equal(progressFromLogs(null), undefined)
})

t.test('the aspect ratio sent is the accepted one closest to the display', async (t) => {
  const { replicateAspectRatio } = await import('../../../src/generation/providers/replicate.js')
  t.equal(replicateAspectRatio(800, 480), '16:9', '5:3 e-ink panel')
  t.equal(replicateAspectRatio(480, 800), '9:16', 'the same panel upright')
  t.equal(replicateAspectRatio(1024, 1024), '1:1')
  t.equal(replicateAspectRatio(1600, 1200), '4:3', '4:3 colour frame')
  t.equal(replicateAspectRatio(600, 448), '4:3', '7.3-inch ACeP')
  t.equal(replicateAspectRatio(2560, 1080), '21:9')
})
