// Provider settings in the config, and createProvider building each provider from them.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../../src/config.js'
import { ProviderError } from '../../../src/generation/provider.js'
import { createProvider, isProviderConfigured, REMOTE_PROVIDERS } from '../../../src/generation/providers/index.js'
import { json, startFakeServer } from '../../helpers/provider-server.js'

const dir = await mkdtemp(join(tmpdir(), 'dps-providers-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const base = { DATA_DIR: dir, AUTH_SECRET: 'x'.repeat(32) }

t.test('no keys, no providers', async (t) => {
  const c = loadConfig(base)
  t.same(c.providers, {})
  for (const name of REMOTE_PROVIDERS) {
    t.equal(isProviderConfigured(name, c), false)
    let caught: unknown
    try {
      createProvider(name, c)
    } catch (err) {
      caught = err
    }
    t.ok(caught instanceof ProviderError, `${name} without a key`)
    t.equal((caught as ProviderError).code, 'PROVIDER_NOT_CONFIGURED')
    t.equal((caught as ProviderError).retryable, false)
  }
  t.throws(() => createProvider('replicate', c), /set REPLICATE_API_TOKEN/, 'the message names the setting')
})

t.test('IMAGE_PROVIDER names a provider whose key is set', async (t) => {
  t.throws(() => loadConfig({ ...base, IMAGE_PROVIDER: 'replicate' }), /IMAGE_PROVIDER=replicate needs REPLICATE_API_TOKEN/)
  t.throws(() => loadConfig({ ...base, IMAGE_PROVIDER: 'openai', OPENAI_API_KEY: '  ' }), /needs OPENAI_API_KEY/, 'a blank key is no key')
  t.equal(loadConfig({ ...base, IMAGE_PROVIDER: 'fal', FAL_KEY: 'id:secret' }).imageProvider, 'fal')
  t.equal(loadConfig(base).imageProvider, 'local')
})

t.test('each key enables its provider with the default base URL', async (t) => {
  const c = loadConfig({ ...base, REPLICATE_API_TOKEN: 'r8_x', FAL_KEY: 'id:secret', BFL_API_KEY: 'b', OPENAI_API_KEY: 'sk-x' })
  t.same(c.providers, {
    replicate: { token: 'r8_x', baseUrl: 'https://api.replicate.com' },
    fal: { key: 'id:secret', baseUrl: 'https://queue.fal.run' },
    bfl: { key: 'b', baseUrl: 'https://api.bfl.ai' },
    openai: { key: 'sk-x', baseUrl: 'https://api.openai.com' },
  })
  for (const name of REMOTE_PROVIDERS) {
    t.equal(isProviderConfigured(name, c), true)
    t.equal(createProvider(name, c).name, name)
  }
})

t.test('base URLs are validated, trimmed of a trailing slash; a blank key is no key', async (t) => {
  const c = loadConfig({ ...base, FAL_KEY: 'k', FAL_BASE_URL: 'http://127.0.0.1:9999/', OPENAI_API_KEY: '  ', BFL_BASE_URL: '' })
  t.same(c.providers, { fal: { key: 'k', baseUrl: 'http://127.0.0.1:9999' } })
  for (const [variable, value] of [
    ['REPLICATE_BASE_URL', 'not a url'],
    ['FAL_BASE_URL', 'ftp://queue.fal.run'],
    ['BFL_BASE_URL', 'file:///etc/passwd'],
    ['OPENAI_BASE_URL', 'api.openai.com'],
  ] as const) {
    let caught: unknown
    try {
      loadConfig({ ...base, [variable]: value })
    } catch (err) {
      caught = err
    }
    t.ok(caught instanceof ConfigError, `${variable}=${value} is refused`)
    t.match((caught as Error).message, variable, 'the message names the variable')
  }
})

t.test('createProvider wires the configured key and base URL', async (t) => {
  const fake = await startFakeServer(t, (_req, res) => json(res, 201, { id: 'p-1', status: 'starting' }))
  const c = loadConfig({ ...base, REPLICATE_API_TOKEN: 'r8_wired', REPLICATE_BASE_URL: `${fake.url}/` })
  const p = createProvider('replicate', c, { timeoutMs: 2000 })
  const started = await p.start({ prompt: 'p', width: 64, height: 64, model: 'a/b', seed: 1 })
  t.equal(started.providerJobId, 'p-1')
  t.equal(fake.requests[0]!.path, '/v1/models/a/b/predictions')
  t.equal(fake.requests[0]!.headers.authorization, 'Bearer r8_wired')
})
