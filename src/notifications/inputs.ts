// The push subscription a browser sends, as a schema: POST /api/notifications/subscriptions
// validates with it and SubscriptionInput is derived from it, so the two cannot drift.
import { Type, type Static } from 'typebox'
import { pushSubscription } from '../openapi/examples.js'

const base64url = Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_-]+={0,2}$' })

export const subscriptionBody = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 2048 }),
    // `type: [..., 'null']` rather than a union, which the document would show as an anyOf.
    expirationTime: Type.Optional(Type.Unsafe<number | null>({ type: ['number', 'null'] })),
    keys: Type.Object({ p256dh: base64url, auth: base64url }, { additionalProperties: false }),
  },
  { additionalProperties: false, examples: [{ ...pushSubscription, expirationTime: null }] },
)
export type SubscriptionInput = Static<typeof subscriptionBody>
