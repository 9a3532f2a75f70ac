// Organizations through Better Auth's organization plugin: teams, invitations to the user and
// answering them, the active organization (whose frames the device list shows). The list of
// organizations and the active one are Better Auth's own stores (authClient.useListOrganizations,
// useActiveOrganization), read again by the screens that show them.
import { mutationOptions, queryOptions } from '@tanstack/react-query'
import { authClient, authData } from '../auth'
import { deviceKeys } from './devices'

const all = ['organizations'] as const

/** @public: also read by the data layer's tests (test/web/data-layer.test.ts loads this module by path, which knip does not follow). */
export const organizationKeys = {
  all,
  teams: (organizationId: string) => [...all, 'teams', organizationId] as const,
  myInvitations: () => [...all, 'my-invitations'] as const,
  invitation: (id: string) => [...all, 'invitation', id] as const,
}

/** An invitation as its page shows it. */
export type Invitation = {
  id: string
  organizationId: string
  organizationName?: string
  inviterEmail?: string
  role: string
  status: string
  expiresAt: string | Date
}

export type InvitationAnswer = { id: string; accept: boolean; organizationId: string }

export const organizationQueries = {
  teams: (organizationId: string) =>
    queryOptions({
      queryKey: organizationKeys.teams(organizationId),
      queryFn: () => authData(authClient.organization.listTeams({ query: { organizationId } })),
    }),
  myInvitations: () =>
    queryOptions({ queryKey: organizationKeys.myInvitations(), queryFn: () => authData(authClient.organization.listUserInvitations()) }),
  invitation: (id: string) =>
    queryOptions({
      queryKey: organizationKeys.invitation(id),
      queryFn: () => authData(authClient.organization.getInvitation({ query: { id } })) as Promise<Invitation>,
    }),
}

async function answerInvitation(v: InvitationAnswer) {
  if (!v.accept) return authData(authClient.organization.rejectInvitation({ invitationId: v.id }))
  await authData(authClient.organization.acceptInvitation({ invitationId: v.id }))
  // Joining is for using its frames: the new organization becomes the active one.
  return authData(authClient.organization.setActive({ organizationId: v.organizationId }))
}

export const organizationMutations = {
  /** Another active organization: other frames in the list. */
  setActive: () =>
    mutationOptions({
      mutationFn: (organizationId: string | null) => authData(authClient.organization.setActive({ organizationId })),
      onSuccess: (_res, _v, _r, { client }) => void client.invalidateQueries({ queryKey: deviceKeys.list() }),
    }),
  updateMemberRole: (organizationId: string | undefined) =>
    mutationOptions({
      mutationFn: (v: { memberId: string; role: string }) =>
        authData(authClient.organization.updateMemberRole({ memberId: v.memberId, role: v.role as 'member', organizationId })),
    }),
  removeMember: (organizationId: string | undefined) =>
    mutationOptions({
      mutationFn: (memberIdOrEmail: string) => authData(authClient.organization.removeMember({ memberIdOrEmail, organizationId })),
    }),
  cancelInvitation: () =>
    mutationOptions({ mutationFn: (invitationId: string) => authData(authClient.organization.cancelInvitation({ invitationId })) }),
  createTeam: (organizationId: string) =>
    mutationOptions({
      mutationFn: (name: string) => authData(authClient.organization.createTeam({ name, organizationId })),
      onSuccess: (_res, _v, _r, { client }) => void client.invalidateQueries({ queryKey: organizationKeys.teams(organizationId) }),
    }),
  /** Accepting makes the organization the active one; either answer changes the invitations and may change the frames listed. */
  answerInvitation: () =>
    mutationOptions({
      mutationFn: answerInvitation,
      onSettled: (_res, _err, v, _r, { client }) =>
        Promise.all([
          client.invalidateQueries({ queryKey: organizationKeys.invitation(v.id) }),
          client.invalidateQueries({ queryKey: organizationKeys.myInvitations() }),
          client.invalidateQueries({ queryKey: deviceKeys.list() }),
        ]),
    }),
}
