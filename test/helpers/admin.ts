// An admin account as the service grants it: listed in ADMIN_EMAILS and verified through the
// link in its verification e-mail. The app must be started with ADMIN_EMAILS containing `email`.
import type { TestApp } from './app.js'
import { makeClient, signUp } from './client.js'
import { waitForMail } from './outbox.js'
import { appFetch } from './app-fetch.js'

export async function signUpAdmin(svc: TestApp, email: string): Promise<{ token: string; userId: string }> {
  const { client } = makeClient(svc.url)
  const { token, userId } = await signUp(client, email)
  const mail = await waitForMail(svc.dataDir, email, 'verify-email')
  const res = await appFetch(mail.link as string, { redirect: 'manual' })
  if (res.status >= 400) throw new Error(`verification failed: ${res.status}`)
  return { token, userId }
}

export async function creditUser(svc: TestApp, adminToken: string, userId: string, amount: string): Promise<Response> {
  return appFetch(`${svc.url}/api/admin/credits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ userId, amount }),
  })
}
