// Where an invitation e-mail's link lands (/invitations/:id): after signing in (the gate brings
// the person back here), who invites them to what, and Accept or Decline.
import { type UseMutationResult, useMutation, useQuery } from '@tanstack/react-query'
import { Link, useNavigate, useParams } from 'react-router'
import { type Invitation, type InvitationAnswer, organizationMutations, organizationQueries } from '../queries/organizations'
import { Button, ErrorState, Loading, Notice } from '../ui'

const closed: Record<string, string> = {
  accepted: 'You have already accepted this invitation.',
  rejected: 'This invitation was declined.',
  canceled: 'This invitation was withdrawn by the organization.',
}

export function InvitationPage() {
  const { id = '' } = useParams()
  const navigate = useNavigate()
  const invitation = useQuery(organizationQueries.invitation(id))
  const answer = useMutation(organizationMutations.answerInvitation())
  const reply = (v: InvitationAnswer) => answer.mutate(v, { onSuccess: () => (v.accept ? navigate('/organizations') : undefined) })
  return (
    <div className="card narrow">
      <h1>Invitation</h1>
      {invitation.isPending ? <Loading what="the invitation" /> : null}
      {invitation.isError ? <ErrorState error={invitation.error} /> : null}
      {invitation.data ? <Details inv={invitation.data} answer={answer} reply={reply} /> : null}
      <p>
        <Link to="/organizations">Your organizations</Link>
      </p>
    </div>
  )
}

function Details({
  inv,
  answer,
  reply: send,
}: {
  inv: Invitation
  answer: UseMutationResult<unknown, Error, InvitationAnswer>
  reply: (v: InvitationAnswer) => void
}) {
  const org = inv.organizationName ?? 'An organization'
  if (answer.isSuccess && !answer.variables?.accept) return <Notice kind="success">You declined the invitation to {org}.</Notice>
  if (inv.status !== 'pending') return <Notice>{closed[inv.status] ?? 'This invitation is closed.'}</Notice>
  if (new Date(inv.expiresAt).getTime() < Date.now())
    return <Notice>This invitation has expired: ask {inv.inviterEmail ?? 'the organization'} for a new one.</Notice>
  const reply = (accept: boolean) => send({ id: inv.id, accept, organizationId: inv.organizationId })
  return (
    <>
      <p>
        {inv.inviterEmail ?? 'Someone'} invites you to join <strong>{org}</strong> as {inv.role}: you will see and use its frames.
      </p>
      {answer.isError ? <Notice kind="error">{answer.error.message}</Notice> : null}
      <div className="row">
        <Button busy={answer.isPending && answer.variables?.accept} onClick={() => reply(true)}>
          Accept
        </Button>
        <Button kind="secondary" busy={answer.isPending && !answer.variables?.accept} onClick={() => reply(false)}>
          Decline
        </Button>
      </div>
    </>
  )
}
