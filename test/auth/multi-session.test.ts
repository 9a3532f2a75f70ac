// Several accounts signed in on one device: the official client with one cookie jar, as a
// browser holds them, through the multi-session plugin.
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

const PASSWORD = 'correct-horse-battery'
let svc: TestApp

t.before(async () => {
  svc = await startApp(t)
})

async function rootSession(token: string) {
  const res = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, body: (await res.json()) as { user?: { id: string; email: string }; code?: string } }
}

/** Creates an account on a client of its own, so the shared device starts empty. */
async function account(prefix: string, name: string) {
  const email = uniqueEmail(prefix)
  const { userId } = await signUp(makeClient(svc.url).client, email, PASSWORD, name)
  return { email, id: userId }
}

t.test('two accounts on one device: list, switch, revoke', async (t) => {
  const alice = await account('alice', 'Alice')
  const bob = await account('bob', 'Bob')
  const { client, jar } = makeClient(svc.url)

  const a = await client.signIn.email({ email: alice.email, password: PASSWORD })
  t.equal(a.error, null, 'alice signs in')
  const b = await client.signIn.email({ email: bob.email, password: PASSWORD })
  t.equal(b.error, null, 'bob signs in on the same device')
  const aliceToken = a.data!.token
  const bobToken = b.data!.token
  t.not(aliceToken, bobToken)

  // The most recent sign-in is the active account.
  const current = await client.getSession()
  t.equal(current.data?.user.id, bob.id, 'the latest sign-in is active')

  const listed = await client.multiSession.listDeviceSessions()
  t.equal(listed.error, null)
  const sessions = listed.data!
  t.equal(sessions.length, 2, 'both accounts are on the device')
  t.same(sessions.map((s) => s.user.id).sort(), [alice.id, bob.id].sort())
  t.same(sessions.map((s) => s.session.token).sort(), [aliceToken, bobToken].sort())
  t.same(sessions.map((s) => s.user.email).sort(), [alice.email, bob.email].sort())

  // Switch to Alice.
  const switched = await client.multiSession.setActive({ sessionToken: aliceToken })
  t.equal(switched.error, null, 'set-active')
  t.equal(switched.data?.user.id, alice.id)
  t.equal((await client.getSession()).data?.user.id, alice.id, 'get-session now returns alice')
  // Both sessions keep working on their own.
  t.equal((await rootSession(aliceToken)).body.user?.id, alice.id)
  t.equal((await rootSession(bobToken)).body.user?.id, bob.id)

  // And back to Bob.
  t.equal((await client.multiSession.setActive({ sessionToken: bobToken })).data?.user.id, bob.id)
  t.equal((await client.getSession()).data?.user.id, bob.id, 'get-session returns bob again')

  // A token that is not on this device cannot be activated.
  const elsewhere = await makeClient(svc.url).client.signIn.email({ email: alice.email, password: PASSWORD })
  const foreign = await client.multiSession.setActive({ sessionToken: elsewhere.data!.token })
  t.equal(foreign.error?.status, 401, 'a session of another device is refused')
  t.equal(foreign.error?.code, 'INVALID_SESSION_TOKEN')
  t.equal((await client.getSession()).data?.user.id, bob.id, 'the active account did not change')

  // Revoke Alice (not the active one).
  const revoked = await client.multiSession.revoke({ sessionToken: aliceToken })
  t.equal(revoked.error, null, 'revoke')
  t.same(revoked.data, { status: true })
  const after = (await client.multiSession.listDeviceSessions()).data!
  t.same(
    after.map((s) => s.user.id),
    [bob.id],
    'only bob is left on the device',
  )
  const gone = await rootSession(aliceToken)
  t.equal(gone.status, 401, "alice's token no longer works at /get-session")
  t.equal(gone.body.code, 'UNAUTHORIZED')
  t.equal((await rootSession(bobToken)).status, 200, "bob's session still works")
  t.equal((await client.getSession()).data?.user.id, bob.id, 'bob stays active')
  t.equal((await client.multiSession.setActive({ sessionToken: aliceToken })).error?.status, 401, 'a revoked session cannot be activated')
  t.equal((await rootSession(elsewhere.data!.token)).status, 200, "alice's session on another device is untouched")
  t.ok(jar.size > 0)
})

t.test('revoking the active account switches to the next one on the device', async (t) => {
  const carol = await account('carol', 'Carol')
  const dave = await account('dave', 'Dave')
  const { client } = makeClient(svc.url)
  const c = (await client.signIn.email({ email: carol.email, password: PASSWORD })).data!
  const d = (await client.signIn.email({ email: dave.email, password: PASSWORD })).data!
  t.equal((await client.getSession()).data?.user.id, dave.id)

  const revoked = await client.multiSession.revoke({ sessionToken: d.token })
  t.same(revoked.data, { status: true }, 'revoking the active session')
  t.equal((await rootSession(d.token)).status, 401, "dave's token is dead")
  t.equal((await client.getSession()).data?.user.id, carol.id, 'the device falls back to carol')
  const left = (await client.multiSession.listDeviceSessions()).data!
  t.same(
    left.map((s) => s.session.token),
    [c.token],
  )

  // Signing out ends every account on the device.
  const out = await client.signOut()
  t.equal(out.error, null)
  t.equal((await rootSession(c.token)).status, 401, "carol's token is dead after sign-out")
  t.same((await client.multiSession.listDeviceSessions()).data, [], 'the device holds no sessions')
  t.equal((await client.getSession()).data, null)
})

t.test('signing the same account in twice keeps one entry for it', async (t) => {
  const erin = await account('erin', 'Erin')
  const frank = await account('frank', 'Frank')
  const { client } = makeClient(svc.url)
  const first = (await client.signIn.email({ email: erin.email, password: PASSWORD })).data!
  await client.signIn.email({ email: frank.email, password: PASSWORD })
  const again = (await client.signIn.email({ email: erin.email, password: PASSWORD })).data!
  const listed = (await client.multiSession.listDeviceSessions()).data!
  t.same(listed.map((s) => s.user.id).sort(), [erin.id, frank.id].sort(), 'one entry per account')
  t.equal(listed.find((s) => s.user.id === erin.id)?.session.token, again.token, "erin's entry is the newest session")
  t.equal((await rootSession(first.token)).status, 401, "erin's replaced session on this device is ended")
  t.equal((await client.getSession()).data?.user.id, erin.id)
})
