// Answering an invitation, from the list on the organizations screen or from the e-mail's link.
import { authClient, authData } from './auth'

export type InvitationAnswer = { id: string; accept: boolean; organizationId: string }

export async function answerInvitation(v: InvitationAnswer) {
  if (!v.accept) return authData(authClient.organization.rejectInvitation({ invitationId: v.id }))
  await authData(authClient.organization.acceptInvitation({ invitationId: v.id }))
  // Joining is for using its frames: the new organization becomes the active one.
  return authData(authClient.organization.setActive({ organizationId: v.organizationId }))
}
