// Social sign-in is configured from the environment; Apple's form_post callback reaches Better
// Auth as a form body; passwords are stored as argon2id hashes.
import t from 'tap'
import { eq } from 'drizzle-orm'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { account } from '../../src/db/schema.js'
import { appFetch } from '../helpers/app-fetch.js'

t.test('social providers come from the environment', async (t) => {
  const svc = await startApp(t, {
    env: {
      GITHUB_CLIENT_ID: 'gh-client',
      GITHUB_CLIENT_SECRET: 'gh-secret',
      GOOGLE_CLIENT_ID: 'g-client.apps.googleusercontent.com',
      GOOGLE_CLIENT_SECRET: 'g-secret',
      APPLE_CLIENT_ID: 'com.example.pairing.web',
      APPLE_CLIENT_SECRET: 'apple-client-secret-jwt',
    },
  })
  const ask = (provider: string) =>
    appFetch(`${svc.url}/api/auth/sign-in/social`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: svc.url },
      body: JSON.stringify({ provider, callbackURL: '/' }),
    })
  const gh = await ask('github')
  t.equal(gh.status, 200)
  const ghBody = (await gh.json()) as { url: string; redirect: boolean }
  const ghUrl = new URL(ghBody.url)
  t.equal(ghUrl.host, 'github.com')
  t.equal(ghUrl.searchParams.get('client_id'), 'gh-client')
  t.equal(ghUrl.searchParams.get('redirect_uri'), `${svc.url}/api/auth/callback/github`)
  t.ok(ghUrl.searchParams.get('state'), 'with a state parameter')
  const google = (await (await ask('google')).json()) as { url: string }
  t.equal(new URL(google.url).host, 'accounts.google.com')
  const apple = await ask('apple')
  t.equal(apple.status, 200)
  const appleUrl = new URL(((await apple.json()) as { url: string }).url)
  t.equal(appleUrl.host, 'appleid.apple.com')
  t.equal(appleUrl.searchParams.get('client_id'), 'com.example.pairing.web')
  t.equal(appleUrl.searchParams.get('response_mode'), 'form_post', 'Apple calls back with a form post')
  t.equal(appleUrl.searchParams.get('redirect_uri'), `${svc.url}/api/auth/callback/apple`)
  const discord = await ask('discord')
  t.equal(discord.status, 404, 'a provider without configuration is not offered')
  t.type(((await discord.json()) as { message: string }).message, 'string')

  // Apple (and any form_post provider) calls back with a form body: it must reach Better Auth
  // (not a 415), which turns it into its GET callback; that refuses the forged state.
  const cb = await appFetch(`${svc.url}/api/auth/callback/github`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'state=forged&code=abc',
    redirect: 'manual',
  })
  t.equal(cb.status, 302)
  const next = new URL(cb.headers.get('location') as string)
  t.equal(next.pathname, '/api/auth/callback/github')
  t.equal(next.searchParams.get('code'), 'abc', 'the form fields were read')
  const refused = await appFetch(next, { redirect: 'manual' })
  t.equal(refused.status, 302)
  t.match(refused.headers.get('location'), /error/, 'the forged state is refused')
})

t.test('passwords are stored as argon2id hashes', async (t) => {
  const svc = await startApp(t)
  const { userId } = await signUp(makeClient(svc.url).client, uniqueEmail(), 'correct-horse-battery')
  const [row] = await svc.app.database.db.select().from(account).where(eq(account.userId, userId))
  t.match(row?.password, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.notMatch(row?.password, /correct-horse-battery/)
})
