// Firmware tests' shared steps: an app with an admin and an owner, simulated devices of a model,
// a release uploaded as the admin would (multipart), and the admin's JSON calls.
import { join } from 'node:path'
import { resolveProfile, SimDevice, type SimDeviceOptions } from '../../device-sim/index.js'
import { signUpAdmin } from '../helpers/admin.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall, type Res } from '../helpers/http.js'
import { mqttUrl } from '../helpers/mqtt.js'
import { tempDir } from '../device-sim/helpers.js'

type Tap = Parameters<typeof startApp>[0] & { teardown(fn: () => unknown): void }

export type FirmwareWorld = { svc: TestApp; admin: string; owner: string; dir: string }

export async function firmwareWorld(t: Tap, env: Record<string, string> = {}): Promise<FirmwareWorld> {
  const adminEmail = uniqueEmail('fw-admin')
  const svc = await startApp(t, { env: { ADMIN_EMAILS: adminEmail, DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000', ...env } })
  const { token: admin } = await signUpAdmin(svc, adminEmail)
  const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('fw-owner'))
  return { svc, admin, owner, dir: await tempDir(t, 'fw-') }
}

/** Simulated frames of one model, claimed by the owner, connected, and enrolled by the admin in the model's fleet (unless `fleet: false`). */
export async function frames(
  t: Tap,
  w: FirmwareWorld,
  count: number,
  { fleet = true, ...opts }: Partial<SimDeviceOptions> & { model: string; prefix?: string; fleet?: boolean },
): Promise<SimDevice[]> {
  const devices = Array.from(
    { length: count },
    (_, i) =>
      new SimDevice({
        server: w.svc.url,
        mqttUrl: mqttUrl(w.svc),
        name: `${opts.prefix ?? opts.model}-${i + 1}`,
        display: resolveProfile('bw-800x480'),
        statePath: join(w.dir, `${opts.prefix ?? opts.model}-${i + 1}.json`),
        claimToken: w.owner,
        firmware: '1.0.0',
        rebootMs: 50,
        ...opts,
      }),
  )
  for (const d of devices) t.teardown(() => d.stop())
  await Promise.all(devices.map((d) => d.start()))
  if (fleet)
    await enroll(
      w.svc,
      w.admin,
      devices.map((d) => d.deviceId!),
    )
  return devices
}

/** The admin enrolls devices in the fleet of the model each reports: what a rollout reaches. */
export async function enroll(svc: Pick<TestApp, 'url'>, admin: string, deviceIds: string[]): Promise<void> {
  for (const id of deviceIds) {
    const res = await api(svc, admin, 'PUT', `/api/admin/devices/${id}/firmware`, { fleet: true })
    if (res.status !== 200 || res.body.fleet !== true) throw new Error(`enrolling ${id}: ${res.status} ${JSON.stringify(res.body)}`)
  }
}

/** Uploads a release as `token` (multipart, as the console does). */
export async function upload(
  svc: Pick<TestApp, 'url'>,
  token: string,
  fields: { model: string; version: string; channel?: string; notes?: string },
  bytes: Buffer = Buffer.from(`firmware ${fields.model} ${fields.version} `.repeat(200)),
): Promise<Res> {
  const form = new FormData()
  form.set('model', fields.model)
  form.set('version', fields.version)
  form.set('channel', fields.channel ?? 'stable')
  if (fields.notes) form.set('notes', fields.notes)
  form.set('file', new Blob([new Uint8Array(bytes)]), 'firmware.bin')
  const res = await fetch(`${svc.url}/api/admin/firmware`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

export const api = (svc: Pick<TestApp, 'url'>, token: string, method: string, path: string, body?: unknown) =>
  jsonCall(svc.url, path, { method, token, body })
