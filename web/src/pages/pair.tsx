// Pair a frame: the code it shows (or the one in its QR link, /pair?code=…), a name, a colour
// and, for shared frames, an organization.
import { useMutation } from '@tanstack/react-query'
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { useNavigate, useSearchParams } from 'react-router'
import { errorText } from '../api'
import { authClient } from '../auth'
import { deviceMutations } from '../queries/devices'
import { Button, Field, Notice } from '../ui'

type Values = { code: string; name: string; color: string; organizationId: string }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const PIN = /^[A-Z0-9]{4}-?[A-Z0-9]{4}$/

export function PairPage() {
  const [params] = useSearchParams()
  const navigate = useNavigate()
  const pair = useMutation(deviceMutations.pair())
  const orgs = authClient.useListOrganizations()
  const [error, setError] = useState('')
  // From the frame's QR link (/device?user_code=… sends the browser here): the pin the frame
  // shows, filled in for the person to compare with the screen; older links carry a UUID instead.
  const userCode = params.get('userCode') ?? ''
  const byUuid = UUID.test(userCode)
  const linkCode = (params.get('code') ?? '').trim().toUpperCase()
  const fromQr = byUuid || PIN.test(linkCode)
  const { register, handleSubmit, formState } = useForm<Values>({
    defaultValues: { code: linkCode, name: 'Kitchen frame', color: '#2b59c3', organizationId: '' },
  })
  const submit = handleSubmit(async (v) => {
    setError('')
    try {
      const res = await pair.mutateAsync({
        ...(byUuid ? { userCode } : { pinCode: v.code.trim() }),
        name: v.name.trim(),
        color: v.color,
        ...(v.organizationId ? { organizationId: v.organizationId } : {}),
      })
      navigate(`/devices/${res.device.id}`)
    } catch (err) {
      setError(errorText(err))
    }
  })
  return (
    <div className="card narrow">
      <h1>Pair a frame</h1>
      {fromQr ? (
        <Notice>
          You scanned a frame’s QR code
          {byUuid ? '' : `: check that the frame shows ${linkCode}`}. Name it and pair it.
        </Notice>
      ) : (
        <p className="muted">Switch the frame on: it shows a code like ABCD-2345. Type it here.</p>
      )}
      {userCode && !byUuid ? <Notice kind="error">That link does not carry a frame’s code. Type the code the frame shows.</Notice> : null}
      <form onSubmit={submit} noValidate>
        {error ? <Notice kind="error">{error}</Notice> : null}
        {byUuid ? null : (
          <Field label="Code on the frame" error={formState.errors.code}>
            <input
              autoComplete="off"
              autoCapitalize="characters"
              spellCheck={false}
              {...register('code', {
                required: 'Type the code the frame shows',
                pattern: {
                  value: /^\s*[A-Za-z0-9]{4}-?[A-Za-z0-9]{4}\s*$/,
                  message: 'The code is eight letters and digits, like ABCD-2345',
                },
              })}
            />
          </Field>
        )}
        <Field label="Name" error={formState.errors.name}>
          <input {...register('name', { required: 'Give the frame a name', maxLength: { value: 64, message: 'At most 64 characters' } })} />
        </Field>
        <Field label="Colour" error={formState.errors.color}>
          <input type="color" {...register('color')} />
        </Field>
        {orgs.data?.length ? (
          <Field label="Shared with" hint="Members of an organization see and use its frames">
            <select {...register('organizationId')}>
              <option value="">Only me</option>
              {orgs.data.map((o) => (
                <option key={o.id} value={o.id}>
                  {o.name}
                </option>
              ))}
            </select>
          </Field>
        ) : null}
        <Button type="submit" busy={formState.isSubmitting}>
          Pair
        </Button>
      </form>
    </div>
  )
}
