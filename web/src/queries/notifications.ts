// Notifications: which kinds the user wants, and Web Push in this browser (its service worker's
// subscription, known to the service or not).
import { mutationOptions, queryOptions } from '@tanstack/react-query'
import { api, data, type JsonBody } from '../api'

const all = ['notifications'] as const

/** @public: also read by the data layer's tests (test/web/data-layer.test.ts loads this module by path, which knip does not follow). */
export const notificationKeys = {
  all,
  preferences: () => [...all, 'preferences'] as const,
  thisBrowser: () => [...all, 'this-browser'] as const,
}

export const pushSupported = () => 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window

/** The VAPID key as the bytes PushManager.subscribe takes. */
function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = base64url
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .padEnd(Math.ceil(base64url.length / 4) * 4, '=')
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
}

export const notificationQueries = {
  preferences: () =>
    queryOptions({ queryKey: notificationKeys.preferences(), queryFn: async () => data(await api.GET('/api/notifications/preferences')) }),
  /** This browser's subscription endpoint if the service has it (it keeps one per browser and user), else null. */
  thisBrowser: () =>
    queryOptions({
      queryKey: notificationKeys.thisBrowser(),
      enabled: pushSupported(),
      queryFn: async () => {
        const registration = await navigator.serviceWorker.getRegistration('/')
        const sub = await registration?.pushManager.getSubscription()
        if (!sub) return null
        const known = data(await api.GET('/api/notifications/subscriptions')).subscriptions
        return known.some((k) => k.endpoint === sub.endpoint) ? sub.endpoint : null
      },
    }),
}

export const notificationMutations = {
  savePreferences: () =>
    mutationOptions({
      mutationFn: async (patch: JsonBody<'/api/notifications/preferences', 'patch'>) =>
        data(await api.PATCH('/api/notifications/preferences', { body: patch })),
      onSuccess: (prefs, _patch, _r, { client }) => client.setQueryData(notificationKeys.preferences(), prefs),
    }),
  subscribeThisBrowser: () =>
    mutationOptions({
      mutationFn: async () => {
        if ((await Notification.requestPermission()) !== 'granted')
          throw new Error('Notifications are blocked for this site in the browser’s settings.')
        const registration = await navigator.serviceWorker.register('/sw.js', { scope: '/' })
        await navigator.serviceWorker.ready
        const { publicKey } = data(await api.GET('/api/notifications/vapid-public-key'))
        let sub: PushSubscription
        try {
          sub = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) })
        } catch (err) {
          throw new Error(`This browser could not reach its push service: ${(err as Error).message}`)
        }
        const json = sub.toJSON() as { endpoint: string; expirationTime?: number | null; keys: { p256dh: string; auth: string } }
        data(
          await api.POST('/api/notifications/subscriptions', {
            body: { endpoint: json.endpoint, expirationTime: json.expirationTime ?? null, keys: json.keys },
          }),
        )
      },
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: notificationKeys.thisBrowser() }),
    }),
  unsubscribeThisBrowser: () =>
    mutationOptions({
      mutationFn: async (endpoint: string) => {
        data(await api.DELETE('/api/notifications/subscriptions', { body: { endpoint } }))
        const registration = await navigator.serviceWorker.getRegistration('/')
        await (await registration?.pushManager.getSubscription())?.unsubscribe()
      },
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: notificationKeys.thisBrowser() }),
    }),
}
