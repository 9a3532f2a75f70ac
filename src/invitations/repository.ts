// Reads an organization invitation with what its page shows (organization, inviter).
import { eq } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { invitation, organization, user } from '../db/schema.js'

export type InvitationDetails = {
  id: string
  email: string
  role: string | null
  status: string
  expiresAt: Date
  organizationId: string
  organizationName: string
  organizationSlug: string
  inviterName: string | null
}

export async function findInvitationDetails(db: Executor, id: string): Promise<InvitationDetails | undefined> {
  const [row] = await db
    .select({
      id: invitation.id,
      email: invitation.email,
      role: invitation.role,
      status: invitation.status,
      expiresAt: invitation.expiresAt,
      organizationId: invitation.organizationId,
      organizationName: organization.name,
      organizationSlug: organization.slug,
      inviterName: user.name,
    })
    .from(invitation)
    .innerJoin(organization, eq(organization.id, invitation.organizationId))
    .leftJoin(user, eq(user.id, invitation.inviterId))
    .where(eq(invitation.id, id))
    .limit(1)
  return row
}
