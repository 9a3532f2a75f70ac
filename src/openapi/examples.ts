// The people, records and secrets the OpenAPI document's request examples name. One set, shared
// by the route schemas, the Better Auth examples (better-auth-examples.ts) and the test that sends
// every example unchanged (test/openapi/examples.test.ts): a body that names a record can only
// succeed where that record exists, so the test creates each of these under exactly these ids.
// Ids look like the ones the service issues: UUIDs for ours, Better Auth's 32-character ids.

/** Signs up through the examples; every account operation is hers. */
export const ada = {
  name: 'Ada Lovelace',
  email: 'ada@example.com',
  password: 'analytical-engine-1843',
  /** What change-password sets; reset-password sets the first one back. */
  newPassword: 'difference-engine-1822',
  /** Where change-email and the e-mail one-time code's change-email move her. */
  newEmail: 'ada.lovelace@example.com',
} as const

/** An existing account named by id: owns the devices, uploads and playlists; administrators act on her. */
export const grace = {
  id: 'ii5r8AEABUXTt2Tx94C8ybC4sGNGlNSp',
  name: 'Grace Hopper',
  email: 'grace@example.com',
} as const

export const exampleIds = {
  /** A paired frame of Grace's. */
  deviceId: 'f0591590-6151-435c-ace3-fa9f314a4e3f',
  /** Its polling secret while it pairs (answered by POST /api/device/init). */
  deviceCode: '7c8d0c92-3011-492d-8c78-f55c3eed7ec8',
  /** Its MQTT password (answered once by POST /api/device/get-init-device). */
  deviceSecret: 'euUHdMM2ak-o7QickDeJ7OsSr5iofy9thow3cgwMIVo',
  /** The code it shows while it pairs. */
  pinCode: 'BCDF-GHJK',
  /** The QR-code form of another pending pairing's code (denied in the example). */
  userCode: '232c153a-680b-4ee9-977d-e3f0c247b47e',
  /** A clean upload of Grace's. */
  uploadKey: 'uploads/ii5r8AEABUXTt2Tx94C8ybC4sGNGlNSp/6610f57c-817e-4200-b82b-75e59dd2e2cc.jpg',
  /** A direct upload of Grace's, PUT but not yet completed. */
  incomingKey: 'incoming/ii5r8AEABUXTt2Tx94C8ybC4sGNGlNSp/4c6390bb-4240-4447-a508-cf0775da3bb3',
  playlistId: '5b1e3c2d-9f4a-4c8e-8a7b-2d6f0e9c1a34',
  /** The playlist's two items. */
  playlistItemIds: ['8e2f7a10-3c4b-4d5e-9f60-718293a4b5c6', 'c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b'],
  organizationId: 'eGVwnn8btlm9UCUwouD4L8tpRBCilGTj',
  invitationId: 'ZeTNbJOGKDKEEwxyQj9gQfDrMnfMY0Pt',
  /** Ada's membership of the organization. */
  memberId: 'GwA0FZGZbYtXoDJ0N6TCsgVyC8OezC21',
  teamId: 'ADLVKsYVAl8HEnDLWABfhZijHQGKZId7',
  /** One of the caller's sessions (from list-sessions). */
  sessionToken: 'mEisDfqnJGuotNhmoDjLRFiY7AIOGvnq',
  apiKeyId: '7QVKEKo5O321C8ZkuURtqm35E7aenU2v',
  passkeyId: 'kOVU3vyvnhbPG0Htk9RS5BKzL9n14w6L',
  /** Ada's linked Google account (Better Auth's account id, from list-accounts). */
  accountId: 'pfJxcu5lQHSYheSYk4hugXdf0nmj2wkJ',
  /** The token of a password-reset link. */
  resetToken: 'xdiY7UzVUbwpZWBH5c5olV5CFFyrfApK',
  /** A one-time code from an e-mail. */
  otp: '482913',
} as const

/** A browser's PushSubscription (subscription.toJSON()) at Firebase Cloud Messaging. */
export const pushSubscription = {
  endpoint:
    'https://fcm.googleapis.com/fcm/send/dJqS4wU9R0c:APA91bHk2rX5vZ0pLmN8qT3sW6yB1cF4hJ7kM9nP2rT5vX8zA0dG3jL6oQ9sU2wY5bE8hK1mO4qS7uW0xZ3',
  keys: {
    p256dh: 'BIXunYy5QFNUbGQYAW0COteOadrjh91Zwor7_lVwcSky62Kz1ZVv_U040sUYQK4YAu8bB8rNQAj4-A4XMyKfjm4',
    auth: 'c1h38-mzJQcdUGxolybcmg',
  },
} as const
