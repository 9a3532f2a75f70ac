// Firmware for administrators: releases, rollouts per model and channel, and which devices are
// in a model's update fleet. Every change reads all of it again (the counts move together).
import { mutationOptions, queryOptions } from '@tanstack/react-query'
import { api, data } from '../api'
import { deviceKeys } from './devices'

const all = ['firmware'] as const

/** @public: also read by the data layer's tests (test/web/data-layer.test.ts loads this module by path, which knip does not follow). */
export const firmwareKeys = {
  all,
  releases: () => [...all, 'releases'] as const,
  release: (id: string) => [...all, 'release', id] as const,
  rollouts: () => [...all, 'rollouts'] as const,
}

export const firmwareQueries = {
  releases: () =>
    queryOptions({
      queryKey: firmwareKeys.releases(),
      queryFn: async () => data(await api.GET('/api/admin/firmware')).releases,
      refetchInterval: 5000,
    }),
  release: (id: string) =>
    queryOptions({
      queryKey: firmwareKeys.release(id),
      queryFn: async () => data(await api.GET('/api/admin/firmware/{id}', { params: { path: { id } } })),
      refetchInterval: 5000,
    }),
  rollouts: () =>
    queryOptions({
      queryKey: firmwareKeys.rollouts(),
      queryFn: async () => data(await api.GET('/api/admin/firmware-rollouts')).rollouts,
      refetchInterval: 5000,
    }),
}

type Release = { model: string; version: string; channel: string; notes: string; file: File | null }

/** POST /api/admin/firmware (multipart); answers the release or throws the service's message. */
async function uploadRelease(v: Release) {
  if (!v.file) throw new Error('Choose the firmware image')
  const form = new FormData()
  for (const k of ['model', 'version', 'channel', 'notes'] as const) form.append(k, v[k].trim())
  form.append('file', v.file)
  const res = await fetch('/api/admin/firmware', { method: 'POST', body: form, credentials: 'same-origin' })
  // A proxy in front may answer with a page, not JSON: its status is what can be said then.
  const body = (await res.json().catch(() => ({}))) as { message?: string; version?: string }
  if (!res.ok) throw new Error(body.message ?? `The upload failed (${res.status})`)
  return body
}

type Rollout = { model: string; channel: 'stable' | 'beta'; version: string; percent: number; paused?: boolean }

export const firmwareMutations = {
  publish: () =>
    mutationOptions({
      mutationFn: uploadRelease,
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: firmwareKeys.all }),
    }),
  setRollout: () =>
    mutationOptions({
      mutationFn: async (v: Rollout) =>
        data(
          await api.PUT('/api/admin/firmware-rollouts/{model}/{channel}', {
            params: { path: { model: v.model, channel: v.channel } },
            body: { version: v.version, percent: v.percent, ...(v.paused !== undefined ? { paused: v.paused } : {}) },
          }),
        ),
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: firmwareKeys.all }),
    }),
  /** Enrolls devices in (or takes them out of) the fleet of the model each reports, one after another. */
  setFleet: () =>
    mutationOptions({
      mutationFn: async (v: { deviceIds: string[]; fleet: boolean }) => {
        if (!v.deviceIds.length) throw new Error('Paste the ids of the devices, one a line')
        for (const id of v.deviceIds)
          data(await api.PUT('/api/admin/devices/{id}/firmware', { params: { path: { id } }, body: { fleet: v.fleet } }))
        return { count: v.deviceIds.length, fleet: v.fleet }
      },
      onSettled: (_res, _err, v, _r, { client }) => {
        void client.invalidateQueries({ queryKey: firmwareKeys.all })
        // Each device's own firmware card says whether it is in the fleet.
        for (const id of v.deviceIds) void client.invalidateQueries({ queryKey: deviceKeys.firmware(id) })
      },
    }),
}
