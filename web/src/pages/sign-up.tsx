import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link } from 'react-router'
import { authClient, authErrorText, useAfterSignIn } from '../auth'
import { Button, Field, NewPasswordField, Notice } from '../ui'
import { useNext } from './sign-in'

type Values = { name: string; email: string; password: string }

export function SignUpPage() {
  const signedIn = useAfterSignIn()
  const next = useNext()
  const [error, setError] = useState('')
  const { register, handleSubmit, formState } = useForm<Values>()
  const submit = handleSubmit(async (v) => {
    setError('')
    const { error } = await authClient.signUp.email({
      name: v.name,
      email: v.email,
      password: v.password,
      callbackURL: `${window.location.origin}${next}`,
    })
    if (error) return setError(authErrorText(error))
    await signedIn(next)
  })
  return (
    <div className="card narrow">
      <h1>Create an account</h1>
      <form onSubmit={submit} noValidate>
        {error ? <Notice kind="error">{error}</Notice> : null}
        <Field label="Name" error={formState.errors.name}>
          <input
            autoComplete="name"
            {...register('name', { required: 'Enter your name', maxLength: { value: 100, message: 'At most 100 characters' } })}
          />
        </Field>
        <Field label="E-mail" error={formState.errors.email}>
          <input
            type="email"
            autoComplete="email"
            {...register('email', {
              required: 'Enter your e-mail address',
              pattern: { value: /^[^\s@]+@[^\s@]+$/, message: 'That is not an e-mail address' },
            })}
          />
        </Field>
        <NewPasswordField label="Password" register={register} error={formState.errors.password} />
        <Button type="submit" busy={formState.isSubmitting}>
          Create account
        </Button>
      </form>
      <p>
        Have an account? <Link to={next === '/' ? '/signin' : `/signin?next=${encodeURIComponent(next)}`}>Sign in</Link>
      </p>
    </div>
  )
}
