// Your account: name, the sessions signed in as you (revoke any), sign out everywhere else.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useForm } from 'react-hook-form'
import { authClient, authErrorText } from '../auth'
import { Button, ErrorState, Field, Loading, Notice } from '../ui'

/** A Better Auth client result as data, or an error with its words. */
async function ok<T>(p: Promise<{ data: T | null; error: { message?: string; status?: number } | null }>): Promise<T> {
  const { data, error } = await p
  if (error || data === null) throw Object.assign(new Error(authErrorText(error)), { status: error?.status })
  return data
}

export function AccountPage() {
  const { data: session } = authClient.useSession()
  const queryClient = useQueryClient()
  const sessions = useQuery({ queryKey: ['sessions'], queryFn: () => ok(authClient.listSessions()) })
  const profile = useForm<{ name: string }>({ values: { name: session?.user.name ?? '' } })
  const rename = useMutation({ mutationFn: (name: string) => ok(authClient.updateUser({ name })) })
  const revoke = useMutation({
    mutationFn: (token: string) => ok(authClient.revokeSession({ token })),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: ['sessions'] }),
  })
  const revokeOthers = useMutation({
    mutationFn: () => ok(authClient.revokeOtherSessions()),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: ['sessions'] }),
  })
  if (!session) return null
  return (
    <>
      <h1>Account</h1>
      <section className="card" aria-labelledby="profile-title">
        <h2 id="profile-title">Profile</h2>
        <p>
          {session.user.email}{' '}
          {session.user.emailVerified ? <span className="badge online">confirmed</span> : <span className="badge sync">not confirmed</span>}
        </p>
        <form onSubmit={profile.handleSubmit((v) => rename.mutate(v.name.trim()))} noValidate>
          {rename.isError ? <Notice kind="error">{rename.error.message}</Notice> : null}
          {rename.isSuccess ? <Notice kind="success">Saved.</Notice> : null}
          <Field label="Name" error={profile.formState.errors.name}>
            <input autoComplete="name" {...profile.register('name', { required: 'Enter your name' })} />
          </Field>
          <Button type="submit" busy={rename.isPending}>
            Save
          </Button>
        </form>
      </section>
      <section className="card" aria-labelledby="sessions-title">
        <h2 id="sessions-title">Where you are signed in</h2>
        {sessions.isPending ? <Loading what="sessions" /> : null}
        {sessions.isError ? <ErrorState error={sessions.error} retry={() => void sessions.refetch()} /> : null}
        {revoke.isError ? <Notice kind="error">{revoke.error.message}</Notice> : null}
        {sessions.data ? (
          <table>
            <thead>
              <tr>
                <th scope="col">Browser or app</th>
                <th scope="col">Signed in</th>
                <th scope="col">
                  <span className="skip">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {sessions.data.map((s) => (
                <tr key={s.id}>
                  <td>
                    {describeAgent(s.userAgent)}
                    {s.id === session.session.id ? <strong> (this one)</strong> : null}
                  </td>
                  <td>{new Date(s.createdAt).toLocaleString()}</td>
                  <td>
                    {s.id === session.session.id ? null : (
                      <Button
                        kind="secondary"
                        busy={revoke.isPending && revoke.variables === s.token}
                        onClick={() => revoke.mutate(s.token)}
                      >
                        Sign out
                      </Button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        <p>
          <Button kind="secondary" busy={revokeOthers.isPending} onClick={() => revokeOthers.mutate()}>
            Sign out everywhere else
          </Button>
        </p>
      </section>
    </>
  )
}

function describeAgent(ua: string | null | undefined): string {
  if (!ua) return 'Unknown'
  const browser = /Firefox\//.test(ua)
    ? 'Firefox'
    : /Edg\//.test(ua)
      ? 'Edge'
      : /Chrom(e|ium)\//.test(ua)
        ? 'Chrome'
        : /Safari\//.test(ua)
          ? 'Safari'
          : ua.split(' ')[0]
  const os = /Android/.test(ua)
    ? 'Android'
    : /iPhone|iPad/.test(ua)
      ? 'iOS'
      : /Mac OS X/.test(ua)
        ? 'macOS'
        : /Windows/.test(ua)
          ? 'Windows'
          : /Linux/.test(ua)
            ? 'Linux'
            : ''
  return os ? `${browser} on ${os}` : (browser ?? 'Unknown')
}
