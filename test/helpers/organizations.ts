// Organizations as their people build them through the official client: the owner creates one and
// invites, the invitee verifies their address from the outbox mail and accepts.
import type { TestApp } from './app.js'
import type { Client } from './client.js'
import { waitForMail } from './outbox.js'
import { appFetch } from './app-fetch.js'

export type Member = { client: Client; email: string }

export async function createOrganization(owner: Client, name: string): Promise<string> {
  const res = await owner.organization.create({ name, slug: `${name.toLowerCase().replace(/\W+/g, '-')}-${Date.now().toString(36)}` })
  if (res.error) throw new Error(`create organization: ${res.error.message}`)
  return res.data!.id
}

/** Invites `who` and has them accept (verifying their e-mail first, as accepting requires); answers their member id. */
export async function joinOrganization(
  svc: Pick<TestApp, 'dataDir'>,
  owner: Client,
  organizationId: string,
  who: Member,
  role: 'member' | 'admin' = 'member',
): Promise<string> {
  const invited = await owner.organization.inviteMember({ email: who.email, role, organizationId })
  if (invited.error) throw new Error(`invite: ${invited.error.message}`)
  const mail = await waitForMail(svc.dataDir, who.email, 'verify-email').catch(() => undefined)
  if (mail?.link) await appFetch(mail.link, { redirect: 'manual' })
  const accepted = await who.client.organization.acceptInvitation({ invitationId: invited.data!.id })
  if (accepted.error) throw new Error(`accept: ${accepted.error.message}`)
  return accepted.data!.member.id
}
