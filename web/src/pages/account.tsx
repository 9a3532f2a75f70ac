// Your account: name, e-mail and password, the sessions signed in as you (revoke any, or all
// others), passkeys and API keys.
import { useMutation, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { errorText } from '../api'
import { authClient, authErrorText } from '../auth'
import { passkeyAuth } from '../auth-extras'
import { accountMutations, accountQueries } from '../queries/account'
import { notificationMutations, notificationQueries, pushSupported } from '../queries/notifications'
import { Button, ErrorState, Field, Loading, NewPasswordField, Notice, TableHead } from '../ui'

export function AccountPage() {
  const { data: session } = authClient.useSession()
  const sessions = useQuery(accountQueries.sessions())
  const profile = useForm<{ name: string }>({ values: { name: session?.user.name ?? '' } })
  const rename = useMutation(accountMutations.rename())
  const revoke = useMutation(accountMutations.revokeSession())
  const revokeOthers = useMutation(accountMutations.revokeOtherSessions())
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
      <ChangeEmail />
      <ChangePassword />
      <Notifications />
      <Passkeys />
      <ApiKeys />
      <section className="card" aria-labelledby="sessions-title">
        <h2 id="sessions-title">Where you are signed in</h2>
        {sessions.isPending ? <Loading what="sessions" /> : null}
        {sessions.isError ? <ErrorState error={sessions.error} retry={() => void sessions.refetch()} /> : null}
        {revoke.isError ? <Notice kind="error">{revoke.error.message}</Notice> : null}
        {sessions.data ? (
          <table>
            <TableHead columns={['Browser or app', 'Signed in']} />
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

function ChangeEmail() {
  const [sentTo, setSentTo] = useState('')
  const [error, setError] = useState('')
  const { register, handleSubmit, formState } = useForm<{ newEmail: string }>()
  const submit = handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.changeEmail({ newEmail: v.newEmail.trim(), callbackURL: `${window.location.origin}/account` })
    if (error) return setError(authErrorText(error))
    setSentTo(v.newEmail.trim())
  })
  return (
    <section className="card" aria-labelledby="email-title">
      <h2 id="email-title">Change e-mail</h2>
      <form onSubmit={submit} noValidate>
        {error ? <Notice kind="error">{error}</Notice> : null}
        {sentTo ? <Notice kind="success">Confirm the change from the link we sent. It takes effect when you open it.</Notice> : null}
        <Field label="New e-mail" error={formState.errors.newEmail}>
          <input
            type="email"
            autoComplete="email"
            {...register('newEmail', {
              required: 'Enter the new address',
              pattern: { value: /^[^\s@]+@[^\s@]+$/, message: 'That is not an e-mail address' },
            })}
          />
        </Field>
        <Button type="submit" busy={formState.isSubmitting}>
          Change e-mail
        </Button>
      </form>
    </section>
  )
}

function ChangePassword() {
  const [done, setDone] = useState(false)
  const [error, setError] = useState('')
  const { register, handleSubmit, formState, reset } = useForm<{ currentPassword: string; password: string }>()
  const submit = handleSubmit(async (v) => {
    setError('')
    setDone(false)
    const { error } = await authClient.changePassword({
      currentPassword: v.currentPassword,
      newPassword: v.password,
      revokeOtherSessions: true,
    })
    if (error) return setError(authErrorText(error))
    reset()
    setDone(true)
  })
  return (
    <section className="card" aria-labelledby="password-title">
      <h2 id="password-title">Change password</h2>
      <form onSubmit={submit} noValidate>
        {error ? <Notice kind="error">{error}</Notice> : null}
        {done ? <Notice kind="success">Password changed; your other sessions are signed out.</Notice> : null}
        <Field label="Current password" error={formState.errors.currentPassword}>
          <input
            type="password"
            autoComplete="current-password"
            {...register('currentPassword', { required: 'Enter your current password' })}
          />
        </Field>
        <NewPasswordField label="New password" register={register} error={formState.errors.password} />
        <Button type="submit" busy={formState.isSubmitting}>
          Change password
        </Button>
      </form>
    </section>
  )
}

function Passkeys() {
  const passkeys = passkeyAuth.useListPasskeys()
  const [error, setError] = useState('')
  const [busy, setBusy] = useState(false)
  const { register, handleSubmit, reset } = useForm<{ name: string }>({ defaultValues: { name: 'This device' } })
  const add = handleSubmit(async (v) => {
    setError('')
    setBusy(true)
    const result = await passkeyAuth.passkey.addPasskey({ name: v.name.trim() || 'Passkey' })
    setBusy(false)
    if (result?.error) return setError(authErrorText(result.error))
    reset()
  })
  const remove = async (id: string) => {
    setError('')
    const { error } = await passkeyAuth.passkey.deletePasskey({ id })
    if (error) setError(authErrorText(error))
  }
  return (
    <section className="card" aria-labelledby="passkeys-title">
      <h2 id="passkeys-title">Passkeys</h2>
      {error ? <Notice kind="error">{error}</Notice> : null}
      {passkeys.isPending ? <Loading what="passkeys" /> : null}
      {passkeys.data?.length === 0 ? <p className="muted">None yet: add one to sign in without a password.</p> : null}
      <ul className="events">
        {(passkeys.data ?? []).map((p) => (
          <li key={p.id}>
            <span>{p.name ?? 'Passkey'}</span>
            <Button kind="secondary" onClick={() => void remove(p.id)}>
              Remove {p.name ?? 'passkey'}
            </Button>
          </li>
        ))}
      </ul>
      <form onSubmit={add} noValidate>
        <Field label="Passkey name">
          <input {...register('name')} />
        </Field>
        <Button type="submit" busy={busy}>
          Add a passkey
        </Button>
      </form>
    </section>
  )
}

function ApiKeys() {
  const keys = useQuery(accountQueries.apiKeys())
  const [created, setCreated] = useState('')
  const form = useForm<{ name: string }>()
  const create = useMutation(accountMutations.createApiKey())
  const remove = useMutation(accountMutations.deleteApiKey())
  return (
    <section className="card" aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p className="muted">For scripts and home automation: send it as the x-api-key header.</p>
      {created ? (
        <Notice kind="success">
          Your new key, shown this once: <code data-testid="new-api-key">{created}</code>
        </Notice>
      ) : null}
      {create.isError ? <Notice kind="error">{create.error.message}</Notice> : null}
      {remove.isError ? <Notice kind="error">{remove.error.message}</Notice> : null}
      {keys.isPending ? <Loading what="API keys" /> : null}
      {keys.isError ? <ErrorState error={keys.error} retry={() => void keys.refetch()} /> : null}
      {keys.data?.length === 0 ? <p className="muted">No keys.</p> : null}
      <ul className="events">
        {(keys.data ?? []).map((k) => (
          <li key={k.id}>
            <span>
              {k.name ?? 'Key'} <span className="muted">{k.start}…</span>
            </span>
            <Button kind="secondary" busy={remove.isPending && remove.variables === k.id} onClick={() => remove.mutate(k.id)}>
              Delete {k.name ?? 'key'}
            </Button>
          </li>
        ))}
      </ul>
      <form
        onSubmit={form.handleSubmit((v) =>
          create.mutate(v.name.trim(), {
            onSuccess: (k) => {
              setCreated(k.key)
              form.reset()
            },
          }),
        )}
        noValidate
      >
        <Field label="Key name" error={form.formState.errors.name}>
          <input
            {...form.register('name', {
              required: 'Name the key (what will use it?)',
              maxLength: { value: 32, message: 'At most 32 characters' },
            })}
          />
        </Field>
        <Button type="submit" busy={create.isPending}>
          Create a key
        </Button>
      </form>
    </section>
  )
}

type Switch = 'generationResults' | 'devicePresence' | 'batteryLow' | 'deviceSilent' | 'firmwareFailed'
/** One switch per kind of notification, as the service keeps them. */
const switches: Array<[Switch, string]> = [
  ['generationResults', 'a picture I asked for is ready, or failed'],
  ['devicePresence', 'one of my frames goes online or offline'],
  ['batteryLow', "a frame's battery runs low"],
  ['deviceSilent', 'a frame has not been heard from for a while'],
  ['firmwareFailed', 'a firmware update of a frame failed'],
]

function Notifications() {
  const prefs = useQuery(notificationQueries.preferences())
  const save = useMutation({
    ...notificationMutations.savePreferences(),
    // The boxes follow the click at once (uncontrolled); a refusal draws them again from the saved values.
    onError: () => setDrawn((n) => n + 1),
  })
  const [drawn, setDrawn] = useState(0)
  const here = useQuery(notificationQueries.thisBrowser())
  const subscribe = useMutation(notificationMutations.subscribeThisBrowser())
  const unsubscribe = useMutation(notificationMutations.unsubscribeThisBrowser())
  return (
    <section className="card" aria-labelledby="notifications-title">
      <h2 id="notifications-title">Notifications</h2>
      {prefs.isPending ? <Loading what="preferences" /> : null}
      {prefs.isError ? <ErrorState error={prefs.error} retry={() => void prefs.refetch()} /> : null}
      {save.isError ? <Notice kind="error">{errorText(save.error)}</Notice> : null}
      {prefs.data ? (
        <fieldset>
          <legend>Tell me when</legend>
          {switches.map(([key, words]) => (
            <label className="row" key={key}>
              <input
                key={`${key}-${drawn}-${prefs.data[key]}`}
                type="checkbox"
                defaultChecked={prefs.data[key]}
                onChange={(e) => save.mutate({ [key]: e.target.checked })}
              />
              {words}
            </label>
          ))}
        </fieldset>
      ) : null}
      <h3>In this browser</h3>
      {!pushSupported() ? <p className="muted">This browser cannot receive notifications.</p> : null}
      {subscribe.isError ? <Notice kind="error">{errorText(subscribe.error)}</Notice> : null}
      {unsubscribe.isError ? <Notice kind="error">{errorText(unsubscribe.error)}</Notice> : null}
      {pushSupported() && here.data ? (
        <p className="row">
          <span>This browser gets notifications.</span>
          <Button kind="secondary" busy={unsubscribe.isPending} onClick={() => unsubscribe.mutate(here.data!)}>
            Stop in this browser
          </Button>
        </p>
      ) : null}
      {pushSupported() && !here.data ? (
        <Button busy={subscribe.isPending} onClick={() => subscribe.mutate()}>
          Notify me in this browser
        </Button>
      ) : null}
    </section>
  )
}
