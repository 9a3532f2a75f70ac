// Administration (role admin only; the API refuses everyone else): find users, ban and unban
// them, see and end their sessions, act as them, and grant credits.
import { useMutation, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link, useNavigate } from 'react-router'
import { errorText } from '../api'
import { authClient } from '../auth'
import { adminMutations, adminQueries } from '../queries/admin'
import { creditMutations } from '../queries/credits'
import { Button, Empty, ErrorState, Field, Loading, Notice, TableHead } from '../ui'

type AdminUser = { id: string; email: string; name: string; role?: string | null; banned?: boolean | null; banReason?: string | null }

export function AdminPage() {
  const { data: session } = authClient.useSession()
  const [search, setSearch] = useState('')
  const [open, setOpen] = useState<string | null>(null)
  const navigate = useNavigate()
  const users = useQuery({ ...adminQueries.users(search), enabled: session?.user.role === 'admin' })
  const ban = useMutation(adminMutations.ban())
  const unban = useMutation(adminMutations.unban())
  const impersonate = useMutation(adminMutations.impersonate())
  const actAs = (userId: string) =>
    impersonate.mutate(userId, {
      onSuccess: async () => {
        await authClient.getSession()
        navigate('/')
        window.location.reload()
      },
    })
  const { register, handleSubmit } = useForm<{ q: string }>()
  if (session?.user.role !== 'admin') return <ErrorState error={new Error('This page is for administrators.')} />
  const list = (users.data?.users ?? []) as AdminUser[]
  // The user whose details are open, while the current search still lists them.
  const openUser = list.find((u) => u.id === open)
  return (
    <>
      <h1>Administration</h1>
      <p>
        <Link to="/admin/firmware">Firmware releases and rollouts →</Link>
      </p>
      <section className="card" aria-labelledby="users-title">
        <h2 id="users-title">Users</h2>
        <form className="row" onSubmit={handleSubmit((v) => setSearch(v.q.trim()))}>
          <Field label="E-mail contains">
            <input type="search" {...register('q')} />
          </Field>
          <Button type="submit" kind="secondary">
            Search
          </Button>
        </form>
        {Object.entries({ ban, unban, impersonate }).map(([name, m]) =>
          m.isError ? (
            <Notice key={name} kind="error">
              {(m.error as Error).message}
            </Notice>
          ) : null,
        )}
        {users.isPending ? <Loading what="users" /> : null}
        {users.isError ? <ErrorState error={users.error} retry={() => void users.refetch()} /> : null}
        {users.isSuccess && list.length === 0 ? <Empty>No user matches.</Empty> : null}
        {list.length ? (
          <table>
            <TableHead columns={['User', 'Role']} />
            <tbody>
              {list.map((u) => (
                <tr key={u.id}>
                  <td>
                    {u.email} <span className="muted">{u.name}</span> {u.banned ? <span className="badge sync">banned</span> : null}
                  </td>
                  <td>{u.role ?? 'user'}</td>
                  <td>
                    {u.id === session.user.id ? (
                      <span className="muted">you</span>
                    ) : (
                      <span className="row">
                        {u.banned ? (
                          <Button kind="secondary" busy={unban.isPending && unban.variables === u.id} onClick={() => unban.mutate(u.id)}>
                            Unban {u.email}
                          </Button>
                        ) : (
                          <Button kind="danger" busy={ban.isPending && ban.variables === u.id} onClick={() => ban.mutate(u.id)}>
                            Ban {u.email}
                          </Button>
                        )}
                        <Button kind="secondary" onClick={() => setOpen(open === u.id ? null : u.id)}>
                          {open === u.id ? 'Close' : 'Sessions and credits'}
                        </Button>
                        <Button kind="secondary" busy={impersonate.isPending && impersonate.variables === u.id} onClick={() => actAs(u.id)}>
                          Act as {u.email}
                        </Button>
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </section>
      {openUser ? <UserDetail user={openUser} /> : null}
    </>
  )
}

function UserDetail({ user }: { user: AdminUser }) {
  const sessions = useQuery(adminQueries.userSessions(user.id))
  const revoke = useMutation(adminMutations.revokeUserSession(user.id))
  const credits = useForm<{ amount: string; note: string }>()
  const grant = useMutation(creditMutations.grant(user.id))
  const list = (sessions.data?.sessions ?? []) as Array<{ id: string; token: string; userAgent?: string | null; createdAt: string | Date }>
  return (
    <section className="card" aria-labelledby="detail-title">
      <h2 id="detail-title">{user.email}</h2>
      <h3>Sessions</h3>
      {sessions.isPending ? <Loading what="sessions" /> : null}
      {sessions.isError ? <ErrorState error={sessions.error} /> : null}
      {revoke.isError ? <Notice kind="error">{revoke.error.message}</Notice> : null}
      {sessions.isSuccess && list.length === 0 ? <p className="muted">Not signed in anywhere.</p> : null}
      <ul className="events">
        {list.map((s) => (
          <li key={s.id}>
            <span>
              {s.userAgent ?? 'Unknown'} <span className="muted">since {new Date(s.createdAt).toLocaleString()}</span>
            </span>
            <Button kind="secondary" busy={revoke.isPending && revoke.variables === s.token} onClick={() => revoke.mutate(s.token)}>
              End session
            </Button>
          </li>
        ))}
      </ul>
      <h3>Grant credits</h3>
      <form
        onSubmit={credits.handleSubmit((v) =>
          grant.mutate(
            { amount: v.amount.trim(), ...(v.note.trim() ? { note: v.note.trim() } : {}) },
            { onSuccess: () => credits.reset() },
          ),
        )}
        noValidate
      >
        {grant.isError ? <Notice kind="error">{errorText(grant.error)}</Notice> : null}
        {grant.isSuccess ? <Notice kind="success">Granted. New balance: {grant.data.balance} credits.</Notice> : null}
        <Field label="Credits" error={credits.formState.errors.amount}>
          <input
            inputMode="decimal"
            {...credits.register('amount', {
              required: 'How many credits?',
              pattern: { value: /^\s*(?:0|[1-9]\d{0,9})(?:\.\d{1,2})?\s*$/, message: 'A positive number with at most two decimals' },
            })}
          />
        </Field>
        <Field label="Note (optional)">
          <input {...credits.register('note', { maxLength: { value: 200, message: 'At most 200 characters' } })} />
        </Field>
        <Button type="submit" busy={grant.isPending}>
          Grant
        </Button>
      </form>
    </section>
  )
}
