// Firmware (role admin only; the API refuses everyone else): upload a release, roll it out to a
// share of a model's devices on a channel, pause, resume, and follow each release's counts and
// every device's progress.
import { useMutation, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link } from 'react-router'
import { errorText } from '../api'
import { authClient } from '../auth'
import { firmwareMutations, firmwareQueries } from '../queries/firmware'
import { Button, Empty, ErrorState, Field, Loading, Notice, TableHead } from '../ui'

type Counts = { offered: number; pending: number; succeeded: number; failed: number; withdrawn: number }
const countText = (c: Counts) => `${c.succeeded} installed · ${c.pending} pending · ${c.failed} failed · ${c.offered} offered`

export function FirmwarePage() {
  const { data: session } = authClient.useSession()
  // Better Auth keeps several roles as one comma-separated string.
  const isAdmin = (session?.user.role ?? '')
    .split(',')
    .map((r) => r.trim())
    .includes('admin')
  const releases = useQuery({ ...firmwareQueries.releases(), enabled: isAdmin })
  const rollouts = useQuery({ ...firmwareQueries.rollouts(), enabled: isAdmin })
  const [file, setFile] = useState<File | null>(null)
  const form = useForm<{ model: string; version: string; channel: string; notes: string }>({ defaultValues: { channel: 'stable' } })
  const publish = useMutation(firmwareMutations.publish())
  const submit = (v: { model: string; version: string; channel: string; notes: string }) =>
    publish.mutate(
      { ...v, file },
      { onSuccess: () => form.reset({ model: form.getValues('model'), version: '', channel: 'stable', notes: '' }) },
    )
  const [detail, setDetail] = useState<string | null>(null)
  if (!isAdmin) return <ErrorState error={new Error('This page is for administrators.')} />
  return (
    <>
      <p>
        <Link to="/admin">← Administration</Link>
      </p>
      <h1>Firmware</h1>
      <section className="card" aria-labelledby="upload-title">
        <h2 id="upload-title">New release</h2>
        <form onSubmit={form.handleSubmit(submit)} noValidate>
          {publish.isError ? <Notice kind="error">{errorText(publish.error)}</Notice> : null}
          {publish.isSuccess ? <Notice kind="success">Release {publish.data.version} is stored and signed.</Notice> : null}
          <div className="row">
            <Field label="Model" error={form.formState.errors.model}>
              <input
                {...form.register('model', {
                  required: 'Which device model?',
                  pattern: { value: /^[\w.-]{1,64}$/, message: 'Letters, digits, . _ -' },
                })}
              />
            </Field>
            <Field label="Version" error={form.formState.errors.version} hint="semantic, such as 1.4.0">
              <input {...form.register('version', { required: 'Which version?' })} />
            </Field>
            <Field label="Channel">
              <select {...form.register('channel')}>
                <option value="stable">stable</option>
                <option value="beta">beta</option>
              </select>
            </Field>
          </div>
          <Field label="Notes">
            <textarea rows={2} {...form.register('notes', { maxLength: { value: 4000, message: 'At most 4000 characters' } })} />
          </Field>
          <Field label="Image">
            <input type="file" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
          </Field>
          <Button type="submit" busy={publish.isPending}>
            Upload and sign
          </Button>
        </form>
      </section>
      <section className="card" aria-labelledby="rollouts-title">
        <h2 id="rollouts-title">Rollouts</h2>
        {rollouts.isPending ? <Loading what="rollouts" /> : null}
        {rollouts.isError ? <ErrorState error={rollouts.error} /> : null}
        {rollouts.isSuccess && rollouts.data.length === 0 ? <Empty>No rollout yet: start one below.</Empty> : null}
        {rollouts.data?.map((r) => (
          <RolloutRow key={`${r.model}/${r.channel}`} rollout={r} />
        ))}
        <h3>Start or change a rollout</h3>
        <RolloutForm />
      </section>
      <section className="card" aria-labelledby="fleet-title">
        <h2 id="fleet-title">Fleet</h2>
        <p className="muted">
          A rollout reaches only devices enrolled here, in the fleet of the model each reports, and only their failures can halt it: the
          model a device declares at pairing is its own word.
        </p>
        <FleetForm />
      </section>
      <section className="card" aria-labelledby="releases-title">
        <h2 id="releases-title">Releases</h2>
        {releases.isPending ? <Loading what="releases" /> : null}
        {releases.isError ? <ErrorState error={releases.error} /> : null}
        {releases.isSuccess && releases.data.length === 0 ? <Empty>No release yet.</Empty> : null}
        {releases.data?.length ? (
          <table>
            <TableHead columns={['Release', 'Devices', '']} />
            <tbody>
              {releases.data.map((r) => (
                <tr key={r.id}>
                  <td>
                    {r.model} {r.version} <span className="muted">{r.channel}</span>
                  </td>
                  <td data-testid={`counts-${r.model}-${r.version}`}>{countText(r.counts)}</td>
                  <td>
                    <Button kind="secondary" onClick={() => setDetail(detail === r.id ? null : r.id)}>
                      {detail === r.id ? 'Close' : `Devices of ${r.version}`}
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {detail ? <ReleaseDevices id={detail} /> : null}
      </section>
    </>
  )
}

type Rollout = {
  model: string
  channel: 'stable' | 'beta'
  version: string | null
  percent: number
  paused: boolean
  haltedAt: string | null
  counts: Counts
}

function RolloutRow({ rollout: r }: { rollout: Rollout }) {
  const set = useMutation(firmwareMutations.setRollout())
  const [percent, setPercent] = useState(r.percent)
  const base = { model: r.model, channel: r.channel, version: r.version ?? '' }
  const state = r.haltedAt ? 'halted: too many failures' : r.paused ? 'paused' : 'running'
  return (
    <div className="rollout" data-testid={`rollout-${r.model}-${r.channel}`}>
      <p>
        <strong>
          {r.model} · {r.channel} → {r.version}
        </strong>{' '}
        at {r.percent} % <span className={r.haltedAt ? 'badge sync' : 'badge'}>{state}</span>
        <br />
        <span className="muted">{countText(r.counts)}</span>
      </p>
      {set.isError ? <Notice kind="error">{errorText(set.error)}</Notice> : null}
      <div className="row">
        <Field label={`Share of ${r.model} devices (%)`}>
          <input type="number" min={0} max={100} value={percent} onChange={(e) => setPercent(Number(e.target.value))} />
        </Field>
        <Button kind="secondary" busy={set.isPending} onClick={() => set.mutate({ ...base, percent })}>
          Set to {percent} %
        </Button>
        {r.paused || r.haltedAt ? (
          <Button kind="secondary" busy={set.isPending} onClick={() => set.mutate({ ...base, percent, paused: false })}>
            Resume
          </Button>
        ) : (
          <Button kind="secondary" busy={set.isPending} onClick={() => set.mutate({ ...base, percent, paused: true })}>
            Pause
          </Button>
        )}
      </div>
    </div>
  )
}

function RolloutForm() {
  const set = useMutation(firmwareMutations.setRollout())
  const form = useForm<{ model: string; channel: 'stable' | 'beta'; version: string; percent: string }>({
    defaultValues: { channel: 'stable', percent: '10' },
  })
  return (
    <form
      onSubmit={form.handleSubmit((v) =>
        set.mutate({ ...v, model: v.model.trim(), version: v.version.trim(), percent: Number(v.percent) }),
      )}
      noValidate
    >
      {set.isError ? <Notice kind="error">{errorText(set.error)}</Notice> : null}
      {set.isSuccess ? (
        <Notice kind="success">
          Offered to {set.data.offeredNow} more {set.data.offeredNow === 1 ? 'device' : 'devices'}.
        </Notice>
      ) : null}
      <div className="row">
        <Field label="Rollout model" error={form.formState.errors.model}>
          <input {...form.register('model', { required: 'Which model?' })} />
        </Field>
        <Field label="Rollout channel">
          <select {...form.register('channel')}>
            <option value="stable">stable</option>
            <option value="beta">beta</option>
          </select>
        </Field>
        <Field label="Target version" error={form.formState.errors.version}>
          <input {...form.register('version', { required: 'Which version?' })} />
        </Field>
        <Field label="Share (%)" error={form.formState.errors.percent}>
          <input
            type="number"
            min={0}
            max={100}
            {...form.register('percent', {
              required: 'How many?',
              min: { value: 0, message: '0 to 100' },
              max: { value: 100, message: '0 to 100' },
            })}
          />
        </Field>
      </div>
      <Button type="submit" busy={set.isPending}>
        Roll out
      </Button>
    </form>
  )
}

/** Enrolls devices (by id, one a line) in the fleet of the model each reports, or takes them out. */
function FleetForm() {
  const [ids, setIds] = useState('')
  const change = useMutation(firmwareMutations.setFleet())
  const send = (fleet: boolean) =>
    change.mutate({ deviceIds: [...new Set(ids.split(/[\s,]+/).filter(Boolean))], fleet }, { onSuccess: () => setIds('') })
  return (
    <form onSubmit={(e) => e.preventDefault()} noValidate>
      {change.isError ? <Notice kind="error">{errorText(change.error)}</Notice> : null}
      {change.isSuccess ? (
        <Notice kind="success">
          {change.data.fleet ? 'Enrolled' : 'Took out'} {change.data.count} {change.data.count === 1 ? 'device' : 'devices'}.
        </Notice>
      ) : null}
      <Field label="Device ids" hint="one a line">
        <textarea rows={3} value={ids} onChange={(e) => setIds(e.target.value)} />
      </Field>
      <div className="row">
        <Button busy={change.isPending} onClick={() => send(true)}>
          Enroll in the fleet
        </Button>
        <Button kind="secondary" busy={change.isPending} onClick={() => send(false)}>
          Take out of the fleet
        </Button>
      </div>
    </form>
  )
}

function ReleaseDevices({ id }: { id: string }) {
  const release = useQuery(firmwareQueries.release(id))
  if (release.isPending) return <Loading what="the release" />
  if (release.isError) return <ErrorState error={release.error} />
  const r = release.data
  return (
    <div>
      <h3>
        {r.model} {r.version}: {r.devices.length ? `${r.devices.length} devices` : 'offered to no device yet'}
      </h3>
      <p className="muted">
        SHA-256 {r.sha256.slice(0, 16)}… · {r.size} bytes{r.notes ? ` · ${r.notes}` : ''}
      </p>
      <ul className="events">
        {r.devices.map((d) => (
          <li key={d.deviceId}>
            <span>
              {d.name} <span className="muted">runs {d.firmware ?? '?'}</span>
            </span>
            <span>
              {d.state}
              {d.reason ? <span className="muted"> ({d.reason})</span> : null}
            </span>
          </li>
        ))}
      </ul>
    </div>
  )
}
