// Forgot password (a link by e-mail) and the page that link opens (choose a new one).
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link, useSearchParams } from 'react-router'
import { authClient, authErrorText } from '../auth'
import { Button, Field, NewPasswordField, Notice } from '../ui'

export function ForgotPasswordPage() {
  const [sent, setSent] = useState(false)
  const [error, setError] = useState('')
  const { register, handleSubmit, formState } = useForm<{ email: string }>()
  const submit = handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.requestPasswordReset({ email: v.email, redirectTo: `${window.location.origin}/new-password` })
    if (error) return setError(authErrorText(error))
    setSent(true)
  })
  return (
    <div className="card narrow">
      <h1>Forgot your password?</h1>
      {sent ? (
        <Notice kind="success">If that address has an account, a link to choose a new password is on its way.</Notice>
      ) : (
        <form onSubmit={submit} noValidate>
          {error ? <Notice kind="error">{error}</Notice> : null}
          <Field label="E-mail" error={formState.errors.email}>
            <input type="email" autoComplete="email" {...register('email', { required: 'Enter your e-mail address' })} />
          </Field>
          <Button type="submit" busy={formState.isSubmitting}>
            Send me a link
          </Button>
        </form>
      )}
      <p>
        <Link to="/signin">Back to sign in</Link>
      </p>
    </div>
  )
}

export function NewPasswordPage() {
  const [params] = useSearchParams()
  const token = params.get('token')
  const [done, setDone] = useState(false)
  const [error, setError] = useState(params.get('error') ? 'This link has expired or was already used. Ask for a new one.' : '')
  const { register, handleSubmit, formState } = useForm<{ password: string }>()
  const submit = handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.resetPassword({ newPassword: v.password, token: token ?? '' })
    if (error) return setError(authErrorText(error))
    setDone(true)
  })
  return (
    <div className="card narrow">
      <h1>Choose a new password</h1>
      {done ? (
        <Notice kind="success">
          Your password is changed and your other sessions are signed out. <Link to="/signin">Sign in</Link>
        </Notice>
      ) : !token ? (
        <Notice kind="error">
          {error || 'This page needs the link from the e-mail.'} <Link to="/forgot-password">Ask for a link</Link>
        </Notice>
      ) : (
        <form onSubmit={submit} noValidate>
          {error ? <Notice kind="error">{error}</Notice> : null}
          <NewPasswordField label="New password" register={register} error={formState.errors.password} />
          <Button type="submit" busy={formState.isSubmitting}>
            Save password
          </Button>
        </form>
      )}
    </div>
  )
}
