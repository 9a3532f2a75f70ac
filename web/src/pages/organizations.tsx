// Organizations: yours (switch the active one, whose frames the device list shows), create one,
// and for the active one its members and roles, invitations and teams; invitations sent to you.
import { useMutation, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { authClient, authErrorText } from '../auth'
import { type InvitationAnswer, organizationMutations, organizationQueries } from '../queries/organizations'
import { Button, Empty, ErrorState, Field, Loading, Notice, TableHead } from '../ui'

const roles = ['member', 'admin', 'owner'] as const

export function OrganizationsPage() {
  const orgs = authClient.useListOrganizations()
  const active = authClient.useActiveOrganization()
  const setActive = useMutation(organizationMutations.setActive())
  return (
    <>
      <h1>Organizations</h1>
      <p className="muted">
        Frames paired into an organization are shared with its members. The device list shows your own frames and the active organization’s.
      </p>
      <MyInvitations />
      <section className="card" aria-labelledby="orgs-title">
        <h2 id="orgs-title">Yours</h2>
        {orgs.isPending ? <Loading what="organizations" /> : null}
        {orgs.error ? <ErrorState error={new Error(authErrorText(orgs.error))} retry={() => void orgs.refetch()} /> : null}
        {setActive.isError ? <Notice kind="error">{setActive.error.message}</Notice> : null}
        {orgs.data?.length === 0 ? <Empty>You are in no organization yet. Create one below, or accept an invitation.</Empty> : null}
        {orgs.data?.length ? (
          <ul className="events">
            {orgs.data.map((o) => (
              <li key={o.id}>
                <span>
                  <strong>{o.name}</strong> {active.data?.id === o.id ? <span className="badge online">active</span> : null}
                </span>
                {active.data?.id === o.id ? (
                  <Button kind="secondary" busy={setActive.isPending} onClick={() => setActive.mutate(null)}>
                    Stop using
                  </Button>
                ) : (
                  <Button
                    kind="secondary"
                    busy={setActive.isPending && setActive.variables === o.id}
                    onClick={() => setActive.mutate(o.id)}
                  >
                    Use {o.name}
                  </Button>
                )}
              </li>
            ))}
          </ul>
        ) : null}
        <CreateOrganization />
      </section>
      {active.data ? <ActiveOrganization /> : null}
    </>
  )
}

function CreateOrganization() {
  const { register, handleSubmit, formState, reset } = useForm<{ name: string }>()
  const [error, setError] = useState('')
  const submit = handleSubmit(async (v) => {
    setError('')
    const name = v.name.trim()
    const slug = `${
      name
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '') || 'org'
    }-${crypto.randomUUID().slice(0, 6)}`
    const { error } = await authClient.organization.create({ name, slug })
    if (error) return setError(authErrorText(error))
    reset()
  })
  return (
    <form onSubmit={submit} noValidate>
      <h3>Create an organization</h3>
      {error ? <Notice kind="error">{error}</Notice> : null}
      <Field label="Organization name" error={formState.errors.name}>
        <input {...register('name', { required: 'Name the organization', maxLength: { value: 100, message: 'At most 100 characters' } })} />
      </Field>
      <Button type="submit" busy={formState.isSubmitting}>
        Create
      </Button>
    </form>
  )
}

function ActiveOrganization() {
  const active = authClient.useActiveOrganization()
  const { data: session } = authClient.useSession()
  const org = active.data
  const refresh = () => void active.refetch()
  // The active organization is Better Auth's own store: read again after each change.
  const updateRole = useMutation({ ...organizationMutations.updateMemberRole(org?.id), onSettled: refresh })
  const removeMember = useMutation({ ...organizationMutations.removeMember(org?.id), onSettled: refresh })
  const cancel = useMutation({ ...organizationMutations.cancelInvitation(), onSettled: refresh })
  if (!org) return null
  const me = org.members.find((m) => m.userId === session?.user.id)
  const manages = me?.role === 'owner' || me?.role === 'admin'
  const pending = org.invitations.filter((i) => i.status === 'pending')
  return (
    <section className="card" aria-labelledby="active-title">
      <h2 id="active-title">{org.name}</h2>
      <h3>Members</h3>
      {Object.entries({ updateRole, removeMember, cancel }).map(([name, m]) =>
        m.isError ? (
          <Notice key={name} kind="error">
            {(m.error as Error).message}
          </Notice>
        ) : null,
      )}
      <table>
        <TableHead columns={['Member', 'Role']} />
        <tbody>
          {org.members.map((m) => (
            <tr key={m.id}>
              <td>
                {m.user.name} <span className="muted">{m.user.email}</span>
              </td>
              <td>
                {manages && m.userId !== me?.userId ? (
                  <select
                    aria-label={`Role of ${m.user.email}`}
                    value={m.role}
                    onChange={(e) => updateRole.mutate({ memberId: m.id, role: e.target.value })}
                  >
                    {roles.map((r) => (
                      <option key={r} value={r}>
                        {r}
                      </option>
                    ))}
                  </select>
                ) : (
                  m.role
                )}
              </td>
              <td>
                {manages && m.userId !== me?.userId ? (
                  <Button
                    kind="danger"
                    busy={removeMember.isPending && removeMember.variables === m.id}
                    onClick={() => removeMember.mutate(m.id)}
                  >
                    Remove
                  </Button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {manages ? (
        <Invite organizationId={org.id} onSent={refresh} />
      ) : (
        <p className="muted">Only owners and admins invite and manage members.</p>
      )}
      {pending.length ? (
        <>
          <h3>Invitations waiting</h3>
          <ul className="events">
            {pending.map((i) => (
              <li key={i.id}>
                <span>
                  {i.email} as {i.role}
                </span>
                {manages ? (
                  <Button kind="secondary" busy={cancel.isPending && cancel.variables === i.id} onClick={() => cancel.mutate(i.id)}>
                    Cancel
                  </Button>
                ) : null}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <Teams organizationId={org.id} manages={manages} />
    </section>
  )
}

function Invite({ organizationId, onSent }: { organizationId: string; onSent: () => void }) {
  const [sentTo, setSentTo] = useState('')
  const [error, setError] = useState('')
  const { register, handleSubmit, formState, reset } = useForm<{ email: string; role: 'member' | 'admin' }>({
    defaultValues: { role: 'member' },
  })
  const submit = handleSubmit(async (v) => {
    setError('')
    setSentTo('')
    const { error } = await authClient.organization.inviteMember({ email: v.email.trim(), role: v.role, organizationId })
    if (error) return setError(authErrorText(error))
    setSentTo(v.email.trim())
    reset({ email: '', role: v.role })
    onSent()
  })
  return (
    <form onSubmit={submit} noValidate>
      <h3>Invite someone</h3>
      {error ? <Notice kind="error">{error}</Notice> : null}
      {sentTo ? <Notice kind="success">Invitation sent to {sentTo}.</Notice> : null}
      <Field label="Their e-mail" error={formState.errors.email}>
        <input
          type="email"
          {...register('email', {
            required: 'Enter their e-mail address',
            pattern: { value: /^[^\s@]+@[^\s@]+$/, message: 'That is not an e-mail address' },
          })}
        />
      </Field>
      <Field label="Role">
        <select {...register('role')}>
          <option value="member">member: uses the shared frames</option>
          <option value="admin">admin: also invites and manages members</option>
        </select>
      </Field>
      <Button type="submit" busy={formState.isSubmitting}>
        Send invitation
      </Button>
    </form>
  )
}

function Teams({ organizationId, manages }: { organizationId: string; manages: boolean }) {
  const teams = useQuery(organizationQueries.teams(organizationId))
  const form = useForm<{ name: string }>()
  const create = useMutation(organizationMutations.createTeam(organizationId))
  return (
    <>
      <h3>Teams</h3>
      {teams.isPending ? <Loading what="teams" /> : null}
      {teams.isError ? <ErrorState error={teams.error} retry={() => void teams.refetch()} /> : null}
      {teams.data?.length === 0 ? <p className="muted">No teams.</p> : null}
      {teams.data?.length ? (
        <ul className="events">
          {teams.data.map((team) => (
            <li key={team.id}>{team.name}</li>
          ))}
        </ul>
      ) : null}
      {manages ? (
        <form onSubmit={form.handleSubmit((v) => create.mutate(v.name.trim(), { onSuccess: () => form.reset() }))} noValidate>
          {create.isError ? <Notice kind="error">{create.error.message}</Notice> : null}
          <Field label="New team" error={form.formState.errors.name}>
            <input {...form.register('name', { required: 'Name the team' })} />
          </Field>
          <Button type="submit" kind="secondary" busy={create.isPending}>
            Add team
          </Button>
        </form>
      ) : null}
    </>
  )
}

function MyInvitations() {
  const orgs = authClient.useListOrganizations()
  const invitations = useQuery(organizationQueries.myInvitations())
  const respond = useMutation(organizationMutations.answerInvitation())
  // The list of organizations is Better Auth's own store: read again after either answer.
  const reply = (v: InvitationAnswer) => respond.mutate(v, { onSettled: () => void orgs.refetch() })
  const pending = (invitations.data ?? []).filter((i) => i.status === 'pending')
  if (!pending.length && !respond.isError) return null
  return (
    <section className="card" aria-labelledby="invited-title">
      <h2 id="invited-title">Invitations for you</h2>
      {respond.isError ? <Notice kind="error">{respond.error.message}</Notice> : null}
      <ul className="events">
        {pending.map((i) => (
          <li key={i.id}>
            <span>
              {(i as { organizationName?: string }).organizationName ?? 'An organization'} invites you as {i.role}
            </span>
            <span className="row">
              <Button
                busy={respond.isPending && respond.variables?.id === i.id && respond.variables.accept}
                onClick={() => reply({ id: i.id, accept: true, organizationId: i.organizationId })}
              >
                Accept
              </Button>
              <Button kind="secondary" onClick={() => reply({ id: i.id, accept: false, organizationId: i.organizationId })}>
                Decline
              </Button>
            </span>
          </li>
        ))}
      </ul>
    </section>
  )
}
