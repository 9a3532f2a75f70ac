// The notifier: keeps browsers' push subscriptions, sends messages to all of a user's
// subscriptions, and is what other modules call to tell a user something
// (app.notifier.notifyUser). Background notifications never throw into their caller.
import { createHash } from 'node:crypto'
import type { Database } from '../db/client.js'
import { appError } from '../errors.js'
import {
  deleteOwnSubscription,
  deleteSubscriptions,
  findPreferences,
  listSubscriptions,
  recordDelivery,
  trimSubscriptions,
  updatePreferences,
  upsertSubscription,
  type Preferences,
  type PushSubscriptionRow,
} from './repository.js'
import type { PresenceChange } from '../mqtt/contract.js'
import type { SubscriptionInput } from './inputs.js'
import type { NotificationKind, NotificationMessage } from './message.js'
import { createPresenceDigest } from './presence-digest.js'
import { MAX_PUSH_PLAINTEXT, type Delivery, type PushSender, type Urgency } from './push-sender.js'

export type SendOptions = { ttl?: number; urgency?: Urgency; topic?: string }
export type SendReport = {
  userId: string
  sent: number
  failed: number
  removed: number
  results: Array<Delivery & { endpointOrigin: string }>
}

// The input type comes from its schema, so it is what the subscribe route validates.
export type { SubscriptionInput } from './inputs.js'

export type NotifierDeps = {
  db: Database
  sender: PushSender
  vapidPublicKey: string
  /** Hosts push endpoints may point at: exact names, '.suffix' for subdomains, or '*' for any https host. */
  endpointHosts: string[]
  defaultTtl: number
  maxSubscriptionsPerUser: number
  /** Presence changes of one owner within this many ms after a notification are sent as one (0: each on its own). */
  presenceWindowMs: number
  log: { warn: (o: object, m?: string) => void; info: (o: object, m?: string) => void }
}

const preferenceFor: Record<NotificationKind, keyof Preferences | null> = {
  generation: 'generationResults',
  'device-presence': 'devicePresence',
  'battery-low': 'batteryLow',
  'device-silent': 'deviceSilent',
  'firmware-failed': 'firmwareFailed',
  message: null,
}

function base64urlBytes(value: string): Buffer | null {
  return /^[A-Za-z0-9_-]+={0,2}$/.test(value) ? Buffer.from(value.replace(/=+$/, ''), 'base64url') : null
}

function hostAllowed(hostname: string, allowed: string[]): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '')
  return allowed.some((a) => a === '*' || (a.startsWith('.') ? host.endsWith(a) : host === a))
}

/** Checks a browser PushSubscription; throws a 400 naming what is wrong. */
function validateSubscription(input: SubscriptionInput, endpointHosts: string[]): void {
  let url: URL
  try {
    url = new URL(input.endpoint)
  } catch {
    throw appError('INVALID_SUBSCRIPTION', 'endpoint is not a URL')
  }
  if (url.protocol !== 'https:') throw appError('INVALID_SUBSCRIPTION', 'endpoint must be an https URL')
  if (url.username || url.password) throw appError('INVALID_SUBSCRIPTION', 'endpoint must not carry credentials')
  // The service POSTs to this URL: only known push services, so a subscription cannot aim it at internal hosts.
  if (!hostAllowed(url.hostname, endpointHosts))
    throw appError('PUSH_SERVICE_NOT_ALLOWED', `push service ${url.hostname} is not an allowed push service`)
  const key = base64urlBytes(input.keys.p256dh)
  if (key?.length !== 65 || key[0] !== 0x04)
    throw appError('INVALID_SUBSCRIPTION', 'keys.p256dh must be an uncompressed P-256 public key (65 bytes, base64url)')
  const auth = base64urlBytes(input.keys.auth)
  if (auth?.length !== 16) throw appError('INVALID_SUBSCRIPTION', 'keys.auth must be a 16-byte secret (base64url)')
}

/** RFC 8030 §5.4: a topic replaces an undelivered message with the same topic; at most 32 base64url characters. */
const topicFor = (scope: string) => createHash('sha256').update(scope).digest('base64url').slice(0, 32)

export function createNotifier(deps: NotifierDeps) {
  const { db, sender, log } = deps
  const pending = new Set<Promise<unknown>>()

  /** Runs a notification in the background; idle() waits for all of them. */
  function track<T>(work: Promise<T>): void {
    const p = work.catch((err) => log.warn({ err }, 'background notification failed')).finally(() => pending.delete(p))
    pending.add(p)
  }

  async function sendToUser(
    userId: string,
    kind: NotificationKind,
    message: NotificationMessage,
    opts: SendOptions = {},
  ): Promise<SendReport> {
    const payload = Buffer.from(
      JSON.stringify({ kind, title: message.title, body: message.body, url: message.url ?? null, sentAt: new Date().toISOString() }),
      'utf8',
    )
    if (payload.length > MAX_PUSH_PLAINTEXT) {
      throw appError(
        'PAYLOAD_TOO_LARGE',
        `The notification is ${payload.length} bytes as JSON; push services accept at most ${MAX_PUSH_PLAINTEXT} bytes before encryption`,
      )
    }
    const subs = await listSubscriptions(db, userId)
    const results = await Promise.all(
      subs.map(async (s) => {
        const d = await sender.deliver(s, payload, {
          ttl: opts.ttl ?? deps.defaultTtl,
          urgency: opts.urgency ?? 'normal',
          topic: opts.topic,
        })
        if (d.status !== 'gone') await recordDelivery(db, s.id, d.status === 'sent', new Date())
        return { ...d, endpointOrigin: new URL(s.endpoint).origin }
      }),
    )
    const gone = results.filter((r) => r.status === 'gone').map((r) => r.subscriptionId)
    await deleteSubscriptions(db, gone)
    if (gone.length) log.info({ userId, removed: gone.length }, 'removed push subscriptions the push service no longer knows')
    return {
      userId,
      sent: results.filter((r) => r.status === 'sent').length,
      failed: results.filter((r) => r.status === 'failed').length,
      removed: gone.length,
      results,
    }
  }

  /** For other modules: notifies the user if their preferences allow this kind; never throws. */
  async function notifyUser(
    userId: string,
    kind: NotificationKind,
    message: NotificationMessage,
    opts: SendOptions = {},
  ): Promise<SendReport | { skipped: 'preference' | 'error' }> {
    try {
      const pref = preferenceFor[kind]
      if (pref && !(await findPreferences(db, userId))[pref]) return { skipped: 'preference' }
      return await sendToUser(userId, kind, message, opts)
    } catch (err) {
      log.warn({ err, userId, kind }, 'notification not sent')
      return { skipped: 'error' }
    }
  }

  const presence = createPresenceDigest({
    windowMs: deps.presenceWindowMs,
    // A topic, so a newer state replaces an undelivered older one at the push service.
    send: ({ userId, message, topicScope }) =>
      track(notifyUser(userId, 'device-presence', message, { urgency: 'low', topic: topicScope ? topicFor(topicScope) : undefined })),
  })

  return {
    vapidPublicKey: deps.vapidPublicKey,
    async subscribe(
      userId: string,
      input: SubscriptionInput,
      userAgent: string | null,
    ): Promise<{ row: PushSubscriptionRow; created: boolean }> {
      validateSubscription(input, deps.endpointHosts)
      const result = await upsertSubscription(db, userId, {
        endpoint: input.endpoint,
        p256dh: input.keys.p256dh,
        auth: input.keys.auth,
        expirationTime: typeof input.expirationTime === 'number' ? new Date(input.expirationTime) : null,
        userAgent: userAgent ? userAgent.slice(0, 300) : null,
      })
      await trimSubscriptions(db, userId, deps.maxSubscriptionsPerUser)
      return result
    },
    async unsubscribe(userId: string, by: { id?: string; endpoint?: string }): Promise<PushSubscriptionRow> {
      const row = await deleteOwnSubscription(db, userId, by)
      if (!row) throw appError('SUBSCRIPTION_NOT_FOUND')
      return row
    },
    list: (userId: string) => listSubscriptions(db, userId),
    sendToUser,
    notifyUser,
    onPresence: (change: PresenceChange) => presence.add(change),
    preferences: (userId: string) => findPreferences(db, userId),
    updatePreferences: (userId: string, patch: Partial<Preferences>) => updatePreferences(db, userId, patch),
    /** Resolves when every background notification started so far has finished. */
    async idle(): Promise<void> {
      while (pending.size) await Promise.allSettled([...pending])
    },
    /** Sends the presence changes still gathered and waits for every send. */
    async close(): Promise<void> {
      presence.close()
      while (pending.size) await Promise.allSettled([...pending])
    },
  }
}

export type Notifier = ReturnType<typeof createNotifier>
