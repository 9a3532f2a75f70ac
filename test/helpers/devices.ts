// Pairs a device through the real HTTP flow, as a device and its owner would.
import { DEFAULT_DISPLAY } from '../../src/images/profiles.js'
import type { TestApp } from './app.js'
import { appFetch } from './app-fetch.js'

export type PairedDevice = { deviceId: string; password: string; clientId: string; topics: Record<string, string>; mqttUrl: string }

async function post(url: string, body: unknown, token?: string) {
  const res = await appFetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  })
  const json = (await res.json()) as Record<string, unknown>
  if (!res.ok) throw new Error(`${url} → ${res.status} ${JSON.stringify(json)}`)
  return json
}

/** Needs an app started with DEVICE_POLL_INTERVAL=0 (or polls slowly enough). */
export async function pairDevice(
  svc: Pick<TestApp, 'url'>,
  token: string,
  opts: { name?: string; palette?: string; width?: number; height?: number; dither?: string; organizationId?: string } = {},
): Promise<PairedDevice> {
  const init = await post(`${svc.url}/api/device/init`, {
    display: {
      width: opts.width ?? DEFAULT_DISPLAY.width,
      height: opts.height ?? DEFAULT_DISPLAY.height,
      palette: opts.palette ?? DEFAULT_DISPLAY.palette,
      ...(opts.dither ? { dither: opts.dither } : {}),
    },
    model: 'test-frame',
    firmware: '1.0.0',
  })
  await post(
    `${svc.url}/api/device/validate`,
    { pinCode: init.pinCode, name: opts.name ?? 'Test frame', ...(opts.organizationId ? { organizationId: opts.organizationId } : {}) },
    token,
  )
  const rec = await post(`${svc.url}/api/device/get-init-device`, { deviceId: init.deviceId, deviceCode: init.deviceCode })
  const creds = rec.credentials as { username: string; password: string; clientId: string; topics: Record<string, string>; mqttUrl: string }
  if (!creds) throw new Error(`no credentials: ${JSON.stringify(rec)}`)
  return { deviceId: creds.username, password: creds.password, clientId: creds.clientId, topics: creds.topics, mqttUrl: creds.mqttUrl }
}
