// Sign in by password, a link by e-mail, a code by e-mail, or a passkey.
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link, useSearchParams } from 'react-router'
import { authClient, authErrorText, useAfterSignIn } from '../auth'
import { passkeyAuth } from '../auth-extras'
import { Button, Field, Notice } from '../ui'

type Method = 'password' | 'link' | 'code' | 'passkey'
const methods: Array<[Method, string]> = [
  ['password', 'Password'],
  ['link', 'E-mail link'],
  ['code', 'E-mail code'],
  ['passkey', 'Passkey'],
]

/** Where to go after signing in (`?next=`): only a path of this console, anything else is /. */
export function useNext(): string {
  const [params] = useSearchParams()
  const next = params.get('next') ?? '/'
  if (!next.startsWith('/') || next.includes('\\')) return '/'
  const url = new URL(next, window.location.origin)
  return url.origin === window.location.origin ? `${url.pathname}${url.search}` : '/'
}

export function SignInPage() {
  const [method, setMethod] = useState<Method>('password')
  const next = useNext()
  // Creating an account on the way (from a QR link, an invitation) comes back to the same place.
  const carry = next === '/' ? '' : `?next=${encodeURIComponent(next)}`
  return (
    <div className="card narrow">
      <h1>Sign in</h1>
      <div className="tabs" role="tablist" aria-label="How to sign in">
        {methods.map(([m, label]) => (
          <button
            key={m}
            type="button"
            role="tab"
            id={`tab-${m}`}
            aria-selected={method === m}
            aria-controls="sign-in-panel"
            className="button secondary"
            onClick={() => setMethod(m)}
          >
            {label}
          </button>
        ))}
      </div>
      <div id="sign-in-panel" role="tabpanel" aria-labelledby={`tab-${method}`}>
        {method === 'password' ? <PasswordForm /> : null}
        {method === 'link' ? <MagicLinkForm /> : null}
        {method === 'code' ? <CodeForm /> : null}
        {method === 'passkey' ? <PasskeyButton /> : null}
      </div>
      <p>
        New here? <Link to={`/signup${carry}`}>Create an account</Link> · <Link to="/forgot-password">Forgot your password?</Link>
      </p>
    </div>
  )
}

const emailRules = {
  required: 'Enter your e-mail address',
  pattern: { value: /^[^\s@]+@[^\s@]+$/, message: 'That is not an e-mail address' },
}

function PasswordForm() {
  const next = useNext()
  const signedIn = useAfterSignIn()
  const [error, setError] = useState('')
  const { register, handleSubmit, formState } = useForm<{ email: string; password: string }>()
  const submit = handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.signIn.email({ email: v.email, password: v.password })
    if (error) return setError(authErrorText(error))
    await signedIn(next)
  })
  return (
    <form onSubmit={submit} noValidate>
      {error ? <Notice kind="error">{error}</Notice> : null}
      <Field label="E-mail" error={formState.errors.email}>
        <input type="email" autoComplete="username" {...register('email', emailRules)} />
      </Field>
      <Field label="Password" error={formState.errors.password}>
        <input type="password" autoComplete="current-password" {...register('password', { required: 'Enter your password' })} />
      </Field>
      <Button type="submit" busy={formState.isSubmitting}>
        Sign in
      </Button>
    </form>
  )
}

function MagicLinkForm() {
  const next = useNext()
  const [sentTo, setSentTo] = useState('')
  const [error, setError] = useState('')
  const { register, handleSubmit, formState } = useForm<{ email: string }>()
  const submit = handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.signIn.magicLink({ email: v.email, callbackURL: `${window.location.origin}${next}` })
    if (error) return setError(authErrorText(error))
    setSentTo(v.email)
  })
  if (sentTo) return <Notice kind="success">We sent a sign-in link to {sentTo}. Open it on this device; it works once.</Notice>
  return (
    <form onSubmit={submit} noValidate>
      {error ? <Notice kind="error">{error}</Notice> : null}
      <Field label="E-mail" error={formState.errors.email}>
        <input type="email" autoComplete="email" {...register('email', emailRules)} />
      </Field>
      <Button type="submit" busy={formState.isSubmitting}>
        Send me a link
      </Button>
    </form>
  )
}

function CodeForm() {
  const next = useNext()
  const signedIn = useAfterSignIn()
  const [email, setEmail] = useState('')
  const [error, setError] = useState('')
  const ask = useForm<{ email: string }>()
  const enter = useForm<{ otp: string }>()
  const send = ask.handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.emailOtp.sendVerificationOtp({ email: v.email, type: 'sign-in' })
    if (error) return setError(authErrorText(error))
    setEmail(v.email)
  })
  const verify = enter.handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.signIn.emailOtp({ email, otp: v.otp.trim() })
    if (error) return setError(authErrorText(error))
    await signedIn(next)
  })
  if (!email) {
    return (
      <form onSubmit={send} noValidate>
        {error ? <Notice kind="error">{error}</Notice> : null}
        <Field label="E-mail" error={ask.formState.errors.email}>
          <input type="email" autoComplete="email" {...ask.register('email', emailRules)} />
        </Field>
        <Button type="submit" busy={ask.formState.isSubmitting}>
          Send me a code
        </Button>
      </form>
    )
  }
  return (
    <form onSubmit={verify} noValidate>
      {error ? <Notice kind="error">{error}</Notice> : <Notice>We sent a code to {email}.</Notice>}
      <Field label="Code" error={enter.formState.errors.otp}>
        <input
          inputMode="numeric"
          autoComplete="one-time-code"
          {...enter.register('otp', {
            required: 'Enter the code from the e-mail',
            pattern: { value: /^\s*\d{4,10}\s*$/, message: 'The code is digits only' },
          })}
        />
      </Field>
      <Button type="submit" busy={enter.formState.isSubmitting}>
        Sign in
      </Button>
    </form>
  )
}

function PasskeyButton() {
  const next = useNext()
  const signedIn = useAfterSignIn()
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')
  const go = async () => {
    setBusy(true)
    setError('')
    const result = await passkeyAuth.signIn.passkey()
    setBusy(false)
    if (result?.error) return setError(authErrorText(result.error))
    await signedIn(next)
  }
  return (
    <div className="row">
      {error ? <Notice kind="error">{error}</Notice> : null}
      <p className="muted">Use a passkey you added to your account on this device or your phone.</p>
      <Button busy={busy} onClick={() => void go()}>
        Sign in with a passkey
      </Button>
    </div>
  )
}
