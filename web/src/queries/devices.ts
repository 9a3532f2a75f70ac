// Frames: the list, one frame and each card of its page (events, firmware, logs, day plan), and
// what changes them. Every key starts with deviceKeys.all; everything about one frame starts with
// deviceKeys.one(id), so a frame's cards can be refreshed or dropped together.
import { infiniteQueryOptions, mutationOptions, type QueryClient, queryOptions } from '@tanstack/react-query'
import { api, data, type JsonBody, uploadPhoto } from '../api'

const all = ['devices'] as const
const one = (id: string) => [...all, 'one', id] as const

/** The log filters of a frame's logs card, part of their key. */
export type LogFilter = { level: 'debug' | 'info' | 'warn' | 'error'; text: string; since: string }

export const deviceKeys = {
  all,
  list: () => [...all, 'list'] as const,
  one,
  detail: (id: string) => [...one(id), 'detail'] as const,
  events: (id: string) => [...one(id), 'events'] as const,
  commandAck: (id: string, commandId: string) => [...one(id), 'command-ack', commandId] as const,
  firmware: (id: string) => [...one(id), 'firmware'] as const,
  logs: (id: string, filter?: LogFilter) => (filter ? ([...one(id), 'logs', filter] as const) : ([...one(id), 'logs'] as const)),
  schedule: (id: string) => [...one(id), 'schedule'] as const,
}

export const deviceQueries = {
  list: () =>
    queryOptions({
      queryKey: deviceKeys.list(),
      queryFn: async () => data(await api.GET('/api/device', { params: { query: { limit: 500 } } })).devices,
      // Status reports (battery, the image shown) have no live topic for apps: look again every 30 s.
      refetchInterval: 30_000,
    }),
  detail: (id: string) =>
    queryOptions({
      queryKey: deviceKeys.detail(id),
      queryFn: async () => data(await api.GET('/api/device/{id}', { params: { path: { id } } })),
      refetchInterval: 30_000,
    }),
  events: (id: string) =>
    infiniteQueryOptions({
      queryKey: deviceKeys.events(id),
      initialPageParam: undefined as string | undefined,
      queryFn: async ({ pageParam }) =>
        data(
          await api.GET('/api/device/{id}/events', {
            params: { path: { id }, query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } },
          }),
        ),
      getNextPageParam: (last) => last.nextCursor ?? undefined,
    }),
  /** Whether the frame has acknowledged a command: a device.ack event with its id among the latest 50. */
  commandAck: (id: string, commandId: string) =>
    queryOptions({
      queryKey: deviceKeys.commandAck(id, commandId),
      queryFn: async () => {
        const res = data(await api.GET('/api/device/{id}/events', { params: { path: { id }, query: { limit: 50 } } }))
        return res.events.some((e) => e.type === 'device.ack' && (e.data as { commandId?: string }).commandId === commandId)
      },
    }),
  firmware: (id: string) =>
    queryOptions({
      queryKey: deviceKeys.firmware(id),
      queryFn: async () => data(await api.GET('/api/device/{id}/firmware', { params: { path: { id } } })),
      refetchInterval: 15_000,
    }),
  logs: (id: string, filter: LogFilter) =>
    infiniteQueryOptions({
      queryKey: deviceKeys.logs(id, filter),
      initialPageParam: undefined as string | undefined,
      queryFn: async ({ pageParam }) =>
        data(
          await api.GET('/api/device/{id}/logs', {
            params: {
              path: { id },
              query: {
                level: filter.level,
                limit: 50,
                ...(filter.text ? { q: filter.text } : {}),
                ...(filter.since ? { since: new Date(filter.since).toISOString() } : {}),
                ...(pageParam ? { cursor: pageParam } : {}),
              },
            },
          }),
        ),
      getNextPageParam: (last) => last.nextCursor ?? undefined,
      // A frame logs while its page is open: new entries show without a reload.
      refetchInterval: 15_000,
    }),
  schedule: (id: string) =>
    queryOptions({
      queryKey: deviceKeys.schedule(id),
      // 404 is "no plan yet", not an error.
      queryFn: async () => {
        const res = await api.GET('/api/device/{id}/schedule', { params: { path: { id } } })
        return res.response.status === 404 ? null : data(res)
      },
      refetchInterval: 60_000,
    }),
}

type Command = JsonBody<'/api/device/{id}/command', 'post'>
type SchedulePlan = JsonBody<'/api/device/{id}/schedule', 'put'>

export const deviceMutations = {
  /** Pairs a frame by the code it shows; the list is read again before the caller goes on. */
  pair: () =>
    mutationOptions({
      mutationFn: async (body: JsonBody<'/api/device/validate', 'post'>) => data(await api.POST('/api/device/validate', { body })),
      onSuccess: (_res, _body, _r, { client }) => client.invalidateQueries({ queryKey: deviceKeys.list() }),
    }),
  rename: (id: string) =>
    mutationOptions({
      mutationFn: async (body: { name: string; color: string }) =>
        data(await api.PATCH('/api/device/{id}', { params: { path: { id } }, body })),
      onSuccess: (device, _body, _r, { client }) => {
        client.setQueryData(deviceKeys.detail(id), device)
        void client.invalidateQueries({ queryKey: deviceKeys.list() })
      },
    }),
  disconnect: (id: string) =>
    mutationOptions({
      mutationFn: async () => data(await api.POST('/api/device/disconnect', { body: { deviceId: id } })),
      onSuccess: (_res, _v, _r, { client }) => void client.invalidateQueries({ queryKey: deviceKeys.detail(id) }),
    }),
  /** Deletes the frame; the list is read again before the caller leaves its page. */
  remove: (id: string) =>
    mutationOptions({
      mutationFn: async () => data(await api.DELETE('/api/device/delete', { body: { deviceId: id } })),
      onSuccess: (_res, _v, _r, { client }) => client.invalidateQueries({ queryKey: deviceKeys.list() }),
    }),
  command: (id: string) =>
    mutationOptions({
      mutationFn: async (body: Command) => data(await api.POST('/api/device/{id}/command', { params: { path: { id } }, body })),
    }),
  /** Uploads a photo and sends it to the frame. */
  sendPhoto: (id: string) =>
    mutationOptions({
      mutationFn: async (file: File) => {
        const key = await uploadPhoto(file)
        return data(await api.POST('/api/upload/send', { body: { key, deviceId: id } }))
      },
    }),
  /** Saves the whole day plan, or removes it (null). */
  saveSchedule: (id: string) =>
    mutationOptions({
      mutationFn: async (plan: SchedulePlan | null) => {
        if (plan) return data(await api.PUT('/api/device/{id}/schedule', { params: { path: { id } }, body: plan }))
        const removed = await api.DELETE('/api/device/{id}/schedule', { params: { path: { id } } })
        // 204 has no body: only a refusal has something to say.
        if (!removed.response.ok) data(removed)
        return null
      },
      onSuccess: (schedule, _plan, _r, { client }) => client.setQueryData(deviceKeys.schedule(id), schedule),
    }),
}

/**
 * A frame's event (connect, disconnect, pairing, an acknowledgement…) seen live: what shows it is
 * read again, the frame, its event log and the list; not its logs or firmware, which poll.
 */
export function invalidateForDeviceEvent(client: QueryClient, id: string): Promise<unknown> {
  return Promise.all([
    client.invalidateQueries({ queryKey: deviceKeys.detail(id) }),
    client.invalidateQueries({ queryKey: deviceKeys.events(id) }),
    client.invalidateQueries({ queryKey: deviceKeys.list() }),
  ])
}
