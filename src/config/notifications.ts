// Web push: the VAPID keys, the push services allowed, and how sends are retried.
import { z } from 'zod'
import { invalid } from './error.js'
import { type Section, type Values, integer, optionalString, variable } from './variables.js'

/** Browsers' push services (Chrome/FCM, Firefox, Edge/WNS, Safari). Endpoints elsewhere are refused. */
const defaultPushHosts =
  'fcm.googleapis.com,android.googleapis.com,updates.push.services.mozilla.com,.push.services.mozilla.com,.notify.windows.com,.push.apple.com'

export const notifications = {
  title: 'Web push',
  variables: {
    vapid: {
      publicKey: variable(
        'VAPID_PUBLIC_KEY',
        optionalString,
        'web push public key (base64url, as `web-push generate-vapid-keys` prints); set both keys or neither',
        { default: 'generated on first start, kept in the database' },
      ),
      privateKey: variable('VAPID_PRIVATE_KEY', optionalString, 'web push private key; set both keys or neither', {
        default: 'generated on first start, kept in the database',
      }),
      subject: variable(
        'VAPID_SUBJECT',
        z
          .string()
          .regex(/^(mailto:|https:\/\/)\S+$/, 'VAPID_SUBJECT must be a mailto: address or an https: URL')
          .optional(),
        'contact sent to push services',
        { default: '`mailto:admin@<host>`', values: 'a `mailto:` address or an `https:` URL' },
      ),
    },
    push: {
      endpointHosts: variable(
        'PUSH_ENDPOINT_HOSTS',
        z
          .string()
          .default(defaultPushHosts)
          .transform((hosts) =>
            hosts
              .split(',')
              .map((h) => h.trim().toLowerCase())
              .filter(Boolean),
          ),
        "hosts a subscription's endpoint may use (`.suffix` for subdomains, `*` for any https host); the service POSTs to these URLs",
        { default: 'FCM, Mozilla, Windows (WNS), Apple push hosts', values: 'comma list' },
      ),
      caFile: variable(
        'PUSH_CA_FILE',
        optionalString,
        'PEM of extra CAs trusted for push services (a private push service, tests); public roots stay trusted',
      ),
      ttl: variable('PUSH_TTL', integer(0, 2419200, 86400), 'seconds a push service keeps an undelivered notification'),
      maxAttempts: variable('PUSH_MAX_ATTEMPTS', integer(1, 10, 4), 'attempts per subscription on 429, 5xx and network errors'),
      maxRetryWait: variable(
        'PUSH_MAX_RETRY_WAIT',
        integer(0, 300, 30),
        'longest wait between attempts (seconds); a longer `Retry-After` is reported as a failure instead',
      ),
      presenceWindow: variable(
        'PUSH_PRESENCE_WINDOW',
        z.coerce.number().min(0).max(3600).default(10),
        'seconds after a device online/offline notification during which an owner\'s further changes are gathered into one message ("7 devices are online"); `0` sends each change on its own',
      ),
    },
  },
} satisfies Section

export function notificationSettings({ vapid, push }: Values<typeof notifications.variables>, publicHost: string) {
  if (Boolean(vapid.publicKey) !== Boolean(vapid.privateKey)) throw invalid(['VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY must be set together'])
  const subject = vapid.subject ?? `mailto:admin@${publicHost}`
  return {
    vapid: vapid.publicKey && vapid.privateKey ? { publicKey: vapid.publicKey, privateKey: vapid.privateKey, subject } : undefined,
    /** The VAPID subject (mailto: or https:) is also used with generated keys. */
    push: { ...push, subject },
  }
}
