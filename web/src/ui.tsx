// The few building blocks every screen uses: labelled fields, buttons that show their work,
// and the loading, empty and error states.
import type { ReactNode } from 'react'
import type { FieldError, UseFormRegister } from 'react-hook-form'
import { errorText } from './api'

export function Field(props: { label: string; error?: FieldError; hint?: string; children: ReactNode }) {
  // The label wraps only its words and the control, so the control's name is the label alone.
  return (
    <div className="field">
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the control is the children; axe-core checks every label in the browser tests */}
      <label className="field">
        <span className="label">{props.label}</span>
        {props.children}
      </label>
      {props.hint && !props.error ? <span className="hint">{props.hint}</span> : null}
      {props.error ? (
        <span className="field-error" role="alert">
          {props.error.message || 'This field is not valid'}
        </span>
      ) : null}
    </div>
  )
}

/** A field for choosing a password, with the service's minimum length (sign-up and reset). */
// biome-ignore lint/suspicious/noExplicitAny: any form with a `password` field
export function NewPasswordField({ label, register, error }: { label: string; register: UseFormRegister<any>; error?: FieldError }) {
  return (
    <Field label={label} error={error} hint="At least 8 characters">
      <input
        type="password"
        autoComplete="new-password"
        {...register('password', { required: 'Choose a password', minLength: { value: 8, message: 'At least 8 characters' } })}
      />
    </Field>
  )
}

/** A photo to upload: the types the service accepts (it reads the real type from the file). */
export function PhotoField({ onPick }: { onPick: (file: File | null) => void }) {
  return (
    <Field label="Photo" hint="PNG, JPEG, WebP, GIF or AVIF">
      <input
        type="file"
        accept="image/png,image/jpeg,image/webp,image/gif,image/avif"
        onChange={(e) => onPick(e.target.files?.[0] ?? null)}
      />
    </Field>
  )
}

export function Button(props: {
  children: ReactNode
  busy?: boolean
  type?: 'button' | 'submit'
  kind?: 'primary' | 'secondary' | 'danger'
  onClick?: () => void
  disabled?: boolean
}) {
  return (
    <button
      type={props.type ?? 'button'}
      className={`button ${props.kind ?? 'primary'}`}
      onClick={props.onClick}
      disabled={props.disabled || props.busy}
      aria-busy={props.busy || undefined}
    >
      {props.busy ? <span className="spinner" aria-hidden="true" /> : null}
      {props.children}
    </button>
  )
}

/** A table's header row: these columns, then one for the row's buttons (named for screen readers). */
export function TableHead({ columns }: { columns: string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
        <th scope="col">
          <span className="skip">Actions</span>
        </th>
      </tr>
    </thead>
  )
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="state loading" role="status">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </p>
  )
}

export function ErrorState({ error, retry }: { error: unknown; retry?: () => void }) {
  return (
    <div className="state error" role="alert">
      <p>{errorText(error)}</p>
      {retry ? (
        <Button kind="secondary" onClick={retry}>
          Try again
        </Button>
      ) : null}
    </div>
  )
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state empty">{children}</div>
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'success' | 'error'; children: ReactNode }) {
  return (
    <div className={`notice ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  )
}

/** "3 minutes ago", from an ISO time. */
export function ago(iso: string | null | undefined): string {
  if (!iso) return 'never'
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000)
  if (s < 45) return 'just now'
  const units: Array<[number, string]> = [
    [60, 'minute'],
    [3600, 'hour'],
    [86400, 'day'],
  ]
  let out = `${Math.round(s / 60)} minutes ago`
  for (const [secs, name] of units) {
    const n = Math.round(s / secs)
    if (s >= secs * 0.75) out = `${n} ${name}${n === 1 ? '' : 's'} ago`
  }
  return out
}
