// Presence notifications, coalesced per owner: the first change is sent at once; further changes
// within the window are gathered (the latest per device) and sent as one message when it ends.
// A fleet reconnecting after a restart would otherwise mean one push (and two database reads)
// per device; the owner wants to know "40 devices are online", not 40 times.
import type { PresenceChange } from '../mqtt/contract.js'
import type { NotificationMessage } from './message.js'

/** topicScope: a newer notice with the same scope replaces an undelivered older one at the push service. */
export type PresenceNotice = { userId: string; message: NotificationMessage; topicScope?: string }

type Window = { timer: NodeJS.Timeout; changes: Map<string, PresenceChange> }

const NAMES_SHOWN = 5

function single(change: PresenceChange): NotificationMessage {
  const what = change.online ? 'is online' : `went offline${change.reason ? ` (${change.reason.replace(/_/g, ' ')})` : ''}`
  return {
    title: `${change.deviceName} ${change.online ? 'is online' : 'is offline'}`,
    body: `${change.deviceName} ${what} at ${change.at.toISOString()}.`,
    url: `/devices/${change.deviceId}`,
  }
}

function names(changes: PresenceChange[]): string {
  const shown = changes.slice(0, NAMES_SHOWN).map((c) => c.deviceName)
  return changes.length > NAMES_SHOWN ? `${shown.join(', ')} and ${changes.length - NAMES_SHOWN} more` : shown.join(', ')
}

/** The message for several devices' changes (the latest change of each). */
export function digestMessage(changes: PresenceChange[]): NotificationMessage {
  if (changes.length === 1) return single(changes[0]!)
  const online = changes.filter((c) => c.online)
  const offline = changes.filter((c) => !c.online)
  const count = (n: number) => `${n} device${n === 1 ? '' : 's'}`
  const title = !offline.length
    ? `${count(online.length)} are online`
    : !online.length
      ? `${count(offline.length)} are offline`
      : `${count(online.length)} online, ${count(offline.length)} offline`
  const parts = [online.length ? `Online: ${names(online)}.` : '', offline.length ? `Offline: ${names(offline)}.` : ''].filter(Boolean)
  return { title, body: parts.join(' '), url: '/devices' }
}

/**
 * `windowMs` 0 sends every change on its own. `send` is called for each notice; close() sends
 * what is still gathered, so a shutdown loses nothing.
 */
export function createPresenceDigest(opts: { windowMs: number; send: (notice: PresenceNotice) => void }) {
  const windows = new Map<string, Window>()

  function open(userId: string) {
    const timer = setTimeout(() => flush(userId, true), opts.windowMs)
    timer.unref()
    windows.set(userId, { timer, changes: new Map() })
  }

  function flush(userId: string, reopen: boolean) {
    const w = windows.get(userId)
    if (!w) return
    clearTimeout(w.timer)
    windows.delete(userId)
    const changes = [...w.changes.values()]
    if (!changes.length) return
    // Something was sent: keep coalescing while changes keep coming.
    if (reopen) open(userId)
    // A digest names other devices than the next one will, so it must not replace it: no topic.
    opts.send({
      userId,
      message: digestMessage(changes),
      topicScope: changes.length === 1 ? `presence:${changes[0]!.deviceId}` : undefined,
    })
  }

  return {
    add(change: PresenceChange) {
      const w = windows.get(change.userId)
      if (w) {
        w.changes.delete(change.deviceId)
        w.changes.set(change.deviceId, change)
        return
      }
      if (opts.windowMs > 0) open(change.userId)
      opts.send({ userId: change.userId, message: single(change), topicScope: `presence:${change.deviceId}` })
    },
    close() {
      for (const userId of [...windows.keys()]) flush(userId, false)
    },
  }
}
