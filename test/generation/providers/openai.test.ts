// The OpenAI images provider against a local server speaking /v1/images/generations. The API is
// synchronous; the server holds each answer until the test opens the gate, so "still running"
// is a state the test controls rather than a matter of timing.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import type { GenerationInput, ImageProvider, ProviderJob, StartResult } from '../../../src/generation/provider.js'
import { createOpenAIProvider, openaiSize } from '../../../src/generation/providers/openai.js'
import {
  json,
  PNG,
  pollUntilError,
  pollWhile,
  startFakeServer,
  until,
  type FakeServer,
  type Recorded,
} from '../../helpers/provider-server.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const KEY = 'sk-test-abcdefghijklmnopqrstuvwxyz'

const input: GenerationInput = {
  prompt: 'a tram in Lisbon, gouache',
  negativePrompt: 'people',
  width: 800,
  height: 480,
  model: 'gpt-image-1',
  seed: 5,
}

type Answer = (req: Recorded, res: ServerResponse, fake: FakeServer) => void

const b64Answer: Answer = (_req, res) =>
  json(res, 200, {
    created: 1713833628,
    background: 'opaque',
    data: [{ b64_json: PNG.toString('base64') }],
    output_format: 'png',
    quality: 'high',
    size: '1536x1024',
    usage: { input_tokens: 50, output_tokens: 50, total_tokens: 100, input_tokens_details: { image_tokens: 0, text_tokens: 50 } },
  })

/** An OpenAI-shaped server whose answers wait for `open()`. */
async function openaiServer(t: Test, answer: Answer = b64Answer) {
  let release!: () => void
  let gate = new Promise<void>((r) => (release = r))
  const fake = await startFakeServer(t, async (req, res) => {
    if (req.method === 'GET' && req.path.startsWith('/files/')) {
      res.writeHead(200, { 'content-type': 'image/png' })
      return void res.end(PNG)
    }
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      return json(res, 401, {
        error: {
          message: 'Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      })
    }
    if (req.method !== 'POST' || req.path !== '/v1/images/generations')
      return json(res, 404, { error: { message: 'Invalid URL', type: 'invalid_request_error', param: null, code: null } })
    await gate
    answer(req, res, fake)
  })
  return {
    fake,
    open: () => release(),
    close: () => (gate = new Promise<void>((r) => (release = r))),
  }
}

const job = (s: StartResult, inp = input): ProviderJob => ({ providerJobId: s.providerJobId, state: s.state ?? {}, input: inp })

function provider(t: Test, fake: FakeServer, timeoutMs = 5000): ImageProvider {
  const p = createOpenAIProvider({ key: KEY, baseUrl: fake.url, timeoutMs })
  t.teardown(() => p.close?.())
  return p
}

t.test('start returns at once; poll reports running until the request answers, then the decoded PNG', async (t) => {
  const { fake, open } = await openaiServer(t)
  const p = provider(t, fake)
  t.equal(p.name, 'openai')

  const started = await p.start(input)
  t.match(started.providerJobId, /^openai-[0-9a-f-]{36}$/)
  await until(() => fake.requests.length === 1)
  const call = fake.requests[0]!
  t.equal(call.path, '/v1/images/generations')
  t.equal(call.headers.authorization, `Bearer ${KEY}`)
  t.same(
    call.body,
    { model: 'gpt-image-1', prompt: 'a tram in Lisbon, gouache\n\nAvoid: people', size: '1536x1024', n: 1 },
    'landscape 800×480 asks for 1536x1024',
  )

  const j = job(started)
  t.same(await p.poll(j), { status: 'running' }, 'the request has not answered yet')
  t.same(await p.poll(j), { status: 'running' })
  open()
  const done = await pollWhile(p, j, ['running'])
  t.equal(done.status, 'succeeded')
  const out = done.status === 'succeeded' ? done.outputs : []
  t.equal(out.length, 1)
  const first = out[0] as { data: Buffer; contentType: string }
  t.equal(first.contentType, 'image/png')
  t.ok(Buffer.isBuffer(first.data) && first.data.equals(PNG), 'b64_json decoded to the PNG bytes')
  t.equal(fake.requests.length, 1, 'one request for one job')
})

t.test('after a restart, a fresh instance polling an unknown job re-issues the request and completes', async (t) => {
  const { fake, open } = await openaiServer(t)
  const before = provider(t, fake)
  const started = await before.start(input)
  await until(() => fake.requests.length === 1)
  // The process dies here: its in-flight request is lost with it.
  await before.close?.()
  await until(() => fake.requests[0]!.closedEarly)

  const after = provider(t, fake)
  const j = job(started)
  t.same(await after.poll(j), { status: 'running' }, 'unknown to this process: the request is issued again')
  await until(() => fake.requests.length === 2)
  t.same(fake.requests[1]!.body, fake.requests[0]!.body, 'the same request, from the job input')
  open()
  const done = await pollWhile(after, j, ['running'])
  t.equal(done.status, 'succeeded')
  t.ok(done.status === 'succeeded' && (done.outputs[0] as { data: Buffer }).data.equals(PNG))
  t.equal(fake.requests.length, 2, 'no third request')
})

t.test('a model answering with a URL gives a URL output; dall-e-3 sizes', async (t) => {
  const { fake, open } = await openaiServer(t, (_req, res, f) =>
    json(res, 200, { created: 1, data: [{ url: `${f.url}/files/img-1.png`, revised_prompt: 'x' }] }),
  )
  const p = provider(t, fake)
  const inp = { ...input, model: 'dall-e-3', negativePrompt: undefined, width: 480, height: 800 }
  const started = await p.start(inp)
  open()
  const done = await pollWhile(p, job(started, inp), ['running'])
  t.same(done, { status: 'succeeded', outputs: [{ url: `${fake.url}/files/img-1.png` }] })
  t.same(fake.requests[0]!.body, { model: 'dall-e-3', prompt: input.prompt, size: '1024x1792', n: 1 })
})

t.test('a moderation refusal is a failed job with code MODERATED', async (t) => {
  const { fake, open } = await openaiServer(t, (_req, res) =>
    json(res, 400, {
      error: {
        message: 'Your request was rejected by the safety system. If you believe this is an error, contact us.',
        type: 'image_generation_user_error',
        param: null,
        code: 'moderation_blocked',
      },
    }),
  )
  const p = provider(t, fake)
  const j = job(await p.start(input))
  open()
  const r = await pollWhile(p, j, ['running'])
  t.equal(r.status, 'failed')
  if (r.status === 'failed') {
    t.equal(r.error.code, 'MODERATED')
    t.match(r.error.message, /rejected by the safety system/)
  }
})

t.test('a 400 is a final PROVIDER_REJECTED failure', async (t) => {
  const { fake, open } = await openaiServer(t, (_req, res) =>
    json(res, 400, {
      error: {
        message: "Invalid value: '800x480'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.",
        type: 'invalid_request_error',
        param: 'size',
        code: 'invalid_value',
      },
    }),
  )
  const p = provider(t, fake)
  const j = job(await p.start(input))
  open()
  const r = await pollWhile(p, j, ['running'])
  t.same(r, {
    status: 'failed',
    error: {
      code: 'PROVIDER_REJECTED',
      message: "openai: HTTP 400: Invalid value: '800x480'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.",
    },
  })
})

t.test('429 with Retry-After: poll throws a retryable error, and the next poll asks again', async (t) => {
  let calls = 0
  const { fake, open } = await openaiServer(t, (req, res) => {
    calls++
    if (calls === 1)
      return json(
        res,
        429,
        {
          error: {
            message: 'Rate limit reached for gpt-image-1 on images per minute (IPM): Limit 5, Used 5, Requested 1.',
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        },
        { 'retry-after': '12' },
      )
    b64Answer(req, res, fake)
  })
  const p = provider(t, fake)
  const j = job(await p.start(input))
  open()
  await until(() => calls === 1)
  const err = await pollUntilError(p, j)
  t.equal(err.code, 'PROVIDER_RATE_LIMITED')
  t.equal(err.retryable, true)
  t.equal(err.retryAfterMs, 12_000)
  t.same(await p.poll(j), { status: 'running' }, 'the retry re-issues the request')
  const done = await pollWhile(p, j, ['running'])
  t.equal(done.status, 'succeeded')
  t.equal(fake.requests.length, 2)
})

t.test('insufficient quota (a 429 retrying cannot fix) fails the job', async (t) => {
  const { fake, open } = await openaiServer(t, (_req, res) =>
    json(res, 429, {
      error: {
        message: 'You exceeded your current quota, please check your plan and billing details.',
        type: 'insufficient_quota',
        param: null,
        code: 'insufficient_quota',
      },
    }),
  )
  const p = provider(t, fake)
  const j = job(await p.start(input))
  open()
  const r = await pollWhile(p, j, ['running'])
  t.equal(r.status === 'failed' && r.error.code, 'PROVIDER_BILLING')
})

t.test('5xx is retryable; 401 is a final PROVIDER_AUTH failure without the key', async (t) => {
  const { fake, open } = await openaiServer(t, (_req, res) =>
    json(res, 500, {
      error: {
        message: 'The server had an error while processing your request. Sorry about that!',
        type: 'server_error',
        param: null,
        code: null,
      },
    }),
  )
  open()
  const p = provider(t, fake)
  const j = job(await p.start(input))
  await until(() => fake.requests.length === 1)
  const err = await pollUntilError(p, j)
  t.equal(err.code, 'PROVIDER_UNAVAILABLE')
  t.equal(err.retryable, true)

  const wrongKey = 'sk-wrong'
  const bad = createOpenAIProvider({ key: wrongKey, baseUrl: fake.url, timeoutMs: 5000 })
  t.teardown(() => bad.close?.())
  const r = await pollWhile(bad, job(await bad.start(input)), ['running'])
  t.equal(r.status, 'failed')
  if (r.status === 'failed') {
    t.equal(r.error.code, 'PROVIDER_AUTH')
    t.match(r.error.message, /Incorrect API key provided/)
    t.notMatch(r.error.message, wrongKey, 'the echoed key is scrubbed')
  }
})

t.test('a request that never answers times out as a retryable error', async (t) => {
  const { fake } = await openaiServer(t)
  const p = provider(t, fake, 150)
  const j = job(await p.start(input))
  const err = await pollUntilError(p, j)
  t.equal(err.code, 'PROVIDER_TIMEOUT')
  t.equal(err.retryable, true)
  await until(() => fake.requests[0]!.closedEarly)
})

t.test('cancel aborts the in-flight request; the job then reads canceled', async (t) => {
  const { fake, open } = await openaiServer(t)
  const p = provider(t, fake)
  const j = job(await p.start(input))
  await until(() => fake.requests.length === 1)
  t.same(await p.poll(j), { status: 'running' })
  await p.cancel(j)
  await until(() => fake.requests[0]!.closedEarly)
  t.pass('the server saw the request abandoned')
  open()
  t.same(await p.poll(j), { status: 'canceled' })
  t.equal(fake.requests.length, 1, 'nothing re-issued')
})

t.test('sizes: the supported size nearest in aspect ratio', async (t) => {
  t.equal(openaiSize('gpt-image-1', 800, 480), '1536x1024')
  t.equal(openaiSize('gpt-image-1', 480, 800), '1024x1536')
  t.equal(openaiSize('gpt-image-1', 600, 600), '1024x1024')
  t.equal(openaiSize('gpt-image-1', 1200, 1100), '1024x1024')
  t.equal(openaiSize('dall-e-3', 1600, 900), '1792x1024')
  t.equal(openaiSize('dall-e-2', 300, 200), '512x512', 'the smallest square that covers')
  t.equal(openaiSize('dall-e-2', 2000, 2000), '1024x1024', 'else the largest')
  t.equal(openaiSize('some-future-model', 800, 480), '1536x1024', 'unknown models get the gpt-image sizes')
})
