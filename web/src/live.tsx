// Live device state over MQTT over WebSocket (/mqtt), the same broker and topics companion apps
// use: devices/{id}/state (retained online/offline) and devices/{id}/events (connect, disconnect,
// pairing…). The browser signs in to the broker with its session cookie (username "user", no
// password), which the broker accepts only from this service's own pages. New events refresh
// the queries that show them.
import { useQueryClient } from '@tanstack/react-query'
import mqttClient, { type MqttClient } from 'u8-mqtt/esm/web/v4.js'
import { createContext, type ReactNode, useContext, useEffect, useMemo, useRef, useSyncExternalStore } from 'react'
import { invalidateForDeviceEvent } from './queries/devices'

export type Presence = { online: boolean; since?: string | null; reason?: string | null }
type Store = {
  connect(): () => void
  watch(deviceIds: readonly string[]): () => void
  presence(deviceId: string): Presence | undefined
  subscribe(listener: () => void): () => void
  connected(): boolean
}

const LiveContext = createContext<Store | null>(null)

/** A subscribe or unsubscribe cut short by a dropped connection is made again on the next one. */
const quietly = (p: Promise<unknown> | undefined) => void p?.catch(() => {})

export function LiveProvider({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient()
  const clientRef = useRef<MqttClient | null>(null)
  const store = useMemo<Store>(() => {
    const presence = new Map<string, Presence>()
    const watched = new Map<string, number>()
    const listeners = new Set<() => void>()
    let isConnected = false
    const notify = () => {
      for (const l of listeners) l()
    }
    const topics = (id: string) => [`devices/${id}/state`, `devices/${id}/events`]
    const onMessage = (id: string, kind: string, payload: Uint8Array) => {
      let body: Record<string, unknown>
      try {
        body = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>
      } catch {
        return
      }
      if (kind === 'state') {
        presence.set(id, { online: body.online === true, since: body.since as string | null, reason: body.reason as string | null })
        notify()
      } else if (kind === 'events') {
        void invalidateForDeviceEvent(queryClient, id)
      }
    }
    /** Connects (once mounted, so StrictMode's double render opens no second client); returns the cleanup. */
    const connect = () => {
      let cancelled = false
      let socket: WebSocket | undefined
      const url = `${window.location.protocol === 'https:' ? 'wss' : 'ws'}://${window.location.host}/mqtt`
      const client = mqttClient({
        // Called each time the WebSocket opens: a clean session, so the subscriptions are made again.
        on_live: async (c) => {
          await c.connect({ client_id: `console-${crypto.randomUUID().slice(0, 12)}`, username: 'user', flags: { clean_start: true } })
          isConnected = true
          const all = [...watched.keys()].flatMap(topics)
          if (all.length) quietly(c.subscribe(all))
          notify()
        },
        on_disconnect: () => {
          isConnected = false
          notify()
          if (!cancelled) setTimeout(open, 3000)
        },
        // A refused or dropped connection is shown as "not live" and retried; nothing to log.
        on_error: () => {},
        log_conn: () => {},
      })
      client.on_topic('devices/:id/:kind', (pkt, { id, kind }) => {
        if (id && kind) onMessage(id, kind, pkt.payload)
      })
      function open() {
        if (cancelled) return
        const ws = new WebSocket(url, ['mqtt'])
        socket = ws
        let opened = false
        // The client takes the socket once open; one that never opens is retried here.
        ws.addEventListener('open', () => {
          opened = true
          client.with_websock(ws)
        })
        ws.addEventListener('close', () => {
          if (!opened && !cancelled) setTimeout(open, 3000)
        })
      }
      open()
      clientRef.current = client
      return () => {
        cancelled = true
        socket?.close()
        clientRef.current = null
        isConnected = false
      }
    }
    return {
      connect,
      watch(ids) {
        const added: string[] = []
        for (const id of ids) {
          const n = watched.get(id) ?? 0
          watched.set(id, n + 1)
          if (n === 0) added.push(id)
        }
        if (added.length && isConnected) quietly(clientRef.current?.subscribe(added.flatMap(topics)))
        return () => {
          const gone: string[] = []
          for (const id of ids) {
            const n = (watched.get(id) ?? 1) - 1
            if (n <= 0) {
              watched.delete(id)
              gone.push(id)
            } else watched.set(id, n)
          }
          if (gone.length && isConnected) quietly(clientRef.current?.unsubscribe(gone.flatMap(topics)))
        }
      },
      presence: (id) => presence.get(id),
      subscribe(listener) {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
      connected: () => isConnected,
    }
  }, [queryClient])
  useEffect(() => store.connect(), [store])
  return <LiveContext.Provider value={store}>{children}</LiveContext.Provider>
}

/** The live presence of these devices (undefined until the broker has said), kept subscribed while mounted. */
export function usePresence(deviceIds: readonly string[]): (id: string) => Presence | undefined {
  const store = useContext(LiveContext)
  const key = deviceIds.join(',')
  useEffect(() => store?.watch(key ? key.split(',') : []), [store, key])
  useSyncExternalStore(
    (l) => store?.subscribe(l) ?? (() => {}),
    () => deviceIds.map((id) => store?.presence(id)?.online ?? '').join(','),
  )
  return (id) => store?.presence(id)
}

/** Whether the live connection is up (shown so a stale list is not mistaken for a live one). */
export function useLiveConnected(): boolean {
  const store = useContext(LiveContext)
  return useSyncExternalStore(
    (l) => store?.subscribe(l) ?? (() => {}),
    () => store?.connected() ?? false,
  )
}
