// No revoked session answers after its revocation returned, whatever was in flight: about twelve
// requests with the token are kept running while the session is signed out, revoked, its user
// banned, its password changed (revoking other sessions) or its user removed. A lookup that began
// before the revocation may still answer (it started before); every request that starts after the
// revocation's response must be refused. Twenty trials of each kind, a hundred per database, in
// three test files so each has its own time budget and they run side by side.
import type { Test } from 'tap'
import { startApp, type TestApp } from './app.js'
import { signUpAdmin } from './admin.js'
import { makeClient, signUp, uniqueEmail } from './client.js'

const TRIALS = 20
const IN_FLIGHT = 12
/** Requests started after the revocation returned, per trial, before it ends. */
const AFTER = 12

export type Kind = 'sign-out' | 'revoke-session' | 'ban' | 'change-password' | 'remove-user'
const PASSWORD = 'correct-horse-battery'

const post = (svc: TestApp, path: string, token: string, body: object = {}) =>
  fetch(`${svc.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify(body),
  })

/** The request an attacker holding the token keeps sending; alternates between our routes and get-session. */
const probe = (svc: TestApp, token: string, n: number) =>
  fetch(`${svc.url}${n % 3 === 2 ? '/get-session' : '/api/device'}`, { headers: { authorization: `Bearer ${token}` } }).then(
    async (res) => {
      // get-session answers 401 for a session it does not know (our route), Better Auth's own would say null.
      await res.arrayBuffer()
      return res.status
    },
  )

async function trial(svc: TestApp, admin: { token: string }, kind: Kind): Promise<{ late: number; accepted: number }> {
  const email = uniqueEmail(`race-${kind}`)
  const victim = await signUp(makeClient(svc.url).client, email)
  // The session the attacker holds: for revoke-session and change-password a second one, revoked by the first.
  let held = victim.token
  if (kind === 'revoke-session' || kind === 'change-password') {
    const res = await fetch(`${svc.url}/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: svc.url },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    held = ((await res.json()) as { token: string }).token
  }
  // Not cached yet: the first requests all look the session up, and those lookups are still
  // running when the revocation lands (the race a warm cache would hide).

  let revokedAt = Infinity
  let stop = false
  let late = 0
  let accepted = 0
  let started = 0
  const lane = async () => {
    while (!stop) {
      const startedAt = performance.now()
      const status = await probe(svc, held, started++)
      if (startedAt >= revokedAt) {
        late += 1
        if (status !== 401) accepted += 1
        if (late >= AFTER) stop = true
      }
    }
  }
  const lanes = Array.from({ length: IN_FLIGHT }, lane)
  // Revoke while those lookups run: at once, or a few milliseconds into them.
  await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 8)))
  const revoke = async () => {
    switch (kind) {
      case 'sign-out':
        return post(svc, '/sign-out', held)
      case 'revoke-session':
        return post(svc, '/revoke-session', victim.token, { token: held })
      case 'ban':
        return post(svc, '/api/auth/admin/ban-user', admin.token, { userId: victim.userId })
      case 'change-password':
        return post(svc, '/change-password', victim.token, {
          currentPassword: PASSWORD,
          newPassword: 'another-long-password',
          revokeOtherSessions: true,
        })
      case 'remove-user':
        return post(svc, '/api/auth/admin/remove-user', admin.token, { userId: victim.userId })
    }
  }
  const res = await revoke()
  if (res.status !== 200) throw new Error(`${kind} answered ${res.status}: ${await res.text()}`)
  revokedAt = performance.now()
  await Promise.all(lanes)
  return { late, accepted }
}

/** Runs TRIALS trials of each kind on one service and asserts no late request was served. */
export async function raceRevocations(t: Test, kinds: readonly Kind[]) {
  const adminEmail = uniqueEmail('race-admin')
  // Real sockets: the race is between requests in flight on their connections and the revocation.
  const svc = await startApp(t, {
    sockets: true,
    env: { ADMIN_EMAILS: adminEmail, SESSION_CACHE_TTL_MS: '60000', RATE_LIMIT_MAX: '1000000', RATE_LIMIT_AUTH_MAX: '1000000' },
  })
  const admin = await signUpAdmin(svc, adminEmail)
  for (const kind of kinds) {
    let accepted = 0
    let late = 0
    for (let i = 0; i < TRIALS; i++) {
      const r = await trial(svc, admin, kind)
      accepted += r.accepted
      late += r.late
    }
    t.equal(accepted, 0, `${kind}: ${late} requests started after ${TRIALS} revocations returned, none served`)
  }
}
