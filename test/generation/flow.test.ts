// The whole pipeline for a paired device connected over MQTT: a prompt is published to it, a
// generation job runs with the local provider, the converted image arrives on its topic, and
// the URL in the message serves exactly the bytes it describes.
import t from 'tap'
import { createHash } from 'node:crypto'
import { renderLocalImage } from '../../src/generation/local-image/render.js'
import { seedFor } from '../../src/generation/providers/local.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

t.test('prompt → generation → image on the device', async (t) => {
  const svc = await startApp(t, {
    env: { DEVICE_POLL_INTERVAL: '0', LOCAL_PROVIDER_DURATION_MS: '600', GENERATION_POLL_BASE_MS: '50', GENERATION_TICK_MS: '50' },
  })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(svc, token, { palette: 'bw', width: 800, height: 480 })
  const c = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(c))
  await subscribe(c, `devices/${dev.deviceId}/#`)

  const promptMsg = nextMessage<{ promptId: string; text: string }>(c, `devices/${dev.deviceId}/prompt`)
  const created = await appFetch(`${svc.url}/api/prompts`, {
    method: 'POST',
    headers: json(token),
    body: JSON.stringify({ text: 'a lighthouse', template: 'line-art', deviceId: dev.deviceId }),
  })
  t.equal(created.status, 201)
  const prompt = (await created.json()) as { id: string; text: string; model: string; width: number; height: number }
  t.match(prompt.text, /line art of a lighthouse/)
  t.equal(prompt.model, 'local')
  t.equal((await promptMsg).payload.promptId, prompt.id, 'the device got the prompt')

  const imageMsg = nextMessage<{
    imageId: string
    url: string
    format: string
    width: number
    height: number
    bytes: number
    sha256: string
  }>(c, `devices/${dev.deviceId}/image`, 20_000)
  const started = await appFetch(`${svc.url}/api/generate`, {
    method: 'POST',
    headers: json(token),
    body: JSON.stringify({ promptId: prompt.id, deviceId: dev.deviceId }),
  })
  t.equal(started.status, 202)
  const job = (await started.json()) as { id: string; status: string; price: string }
  t.equal(job.status, 'queued')
  t.equal(Number(job.price), 0, 'the local model is free')

  const seen = new Set<string>()
  const done = await eventually(async () => {
    const r = (await (await appFetch(`${svc.url}/api/generate/${job.id}`, { headers: json(token) })).json()) as {
      status: string
      progress: number
      result: { images: Array<{ format: string; url: string }> } | null
    }
    seen.add(r.status)
    return r.status === 'succeeded' ? r : null
  }, 20_000)
  t.ok(seen.has('running') || seen.has('queued'), `polling saw the job before it finished (${[...seen].join(', ')})`)
  t.equal(done.progress, 100)
  t.same(done.result?.images.map((i) => i.format).sort(), ['bmp1', 'png1'])

  const msg = (await imageMsg).payload
  t.equal(msg.format, 'bmp1')
  t.equal(msg.width, 800)
  t.equal(msg.height, 480)
  t.equal(msg.bytes, 48062, 'an 800×480 1-bit BMP is 48,062 bytes')
  const file = await appFetch(msg.url)
  t.equal(file.status, 200)
  t.equal(file.headers.get('content-type'), 'image/bmp')
  t.match(file.headers.get('cache-control'), /immutable/)
  const body = Buffer.from(await file.arrayBuffer())
  t.equal(body.length, 48062)
  t.equal(createHash('sha256').update(body).digest('hex'), msg.sha256, 'the URL serves the bytes the message describes')
  t.equal(body.subarray(0, 2).toString('latin1'), 'BM')

  const detail = (await (await appFetch(`${svc.url}/api/device/${dev.deviceId}`, { headers: json(token) })).json()) as { isSynced: boolean }
  t.equal(detail.isSynced, false, 'out of sync until the device shows the new image')
  c.publish(`devices/${dev.deviceId}/up/status`, JSON.stringify({ battery: 90, configVersion: 1, shownImageId: msg.imageId }), { qos: 1 })
  await eventually(async () => {
    const d = (await (await appFetch(`${svc.url}/api/device/${dev.deviceId}`, { headers: json(token) })).json()) as { isSynced: boolean }
    return d.isSynced
  })
  t.pass('synced after it reports the image')

  const list = (await (await appFetch(`${svc.url}/api/prompts/device/${dev.deviceId}`, { headers: json(token) })).json()) as {
    prompts: Array<{ id: string }>
  }
  t.equal(list.prompts[0]?.id, prompt.id)
})

t.test('GET /api/demo runs the pipeline without an account', async (t) => {
  const svc = await startApp(t)
  const res = await appFetch(`${svc.url}/api/demo?palette=spectra6`)
  t.equal(res.status, 200)
  const body = (await res.json()) as {
    prompt: string
    result: { original: { url: string }; images: Array<{ format: string; url: string; width: number }> }
    cached: boolean
  }
  t.equal(body.cached, false)
  t.equal(body.result.images[0]?.format, 'png-spectra6')
  t.equal(body.result.images[0]?.width, 800)
  const original = Buffer.from(await (await appFetch(body.result.original.url)).arrayBuffer())
  const generated = await renderLocalImage({ prompt: body.prompt, width: 800, height: 480, seed: seedFor(`${body.prompt}\n`) })
  t.equal(
    createHash('sha256').update(original).digest('hex'),
    createHash('sha256').update(generated).digest('hex'),
    "the demo's picture is the local model's for that prompt at the display's size (its caption not cropped away), as POST /api/generate draws it",
  )
  const png = await appFetch(body.result.images[0]!.url)
  t.equal(png.headers.get('content-type'), 'image/png')
  const again = (await (await appFetch(`${svc.url}/api/demo?palette=spectra6`)).json()) as { cached: boolean; result: { imageId: string } }
  t.equal(again.cached, true, 'the same demo reuses its files')
  // Open to anyone: 20 a minute per address, then 429 with Retry-After.
  const statuses: number[] = []
  for (let i = 0; i < 20; i++) statuses.push((await appFetch(`${svc.url}/api/demo?palette=spectra6`)).status)
  const limited = statuses.indexOf(429)
  t.equal(limited, 18, 'the 21st demo request of the minute is refused (two were made above)')
  const refused = await appFetch(`${svc.url}/api/demo?palette=spectra6`)
  t.equal(refused.status, 429)
  t.ok(Number(refused.headers.get('retry-after')) > 0, 'with Retry-After')
  t.equal(((await refused.json()) as { code: string }).code, 'TOO_MANY_REQUESTS')
})

t.test('DEMO_ENABLED=false: a public server has no open demo', async (t) => {
  const svc = await startApp(t, { env: { DEMO_ENABLED: 'false' } })
  const res = await appFetch(`${svc.url}/api/demo`)
  t.equal(res.status, 404)
  t.match(await res.json(), { code: 'NOT_FOUND' })
  const doc = (await (await appFetch(`${svc.url}/docs/json`)).json()) as { paths: Record<string, unknown> }
  t.notOk('/api/demo' in doc.paths, 'nor does its API document list one')
})
