// One frame: what it shows, a prompt to generate (with the model's price and your balance) and
// its progress until the frame shows it, a photo to send, commands and their acknowledgement,
// rename, disconnect, delete, its firmware, logs and event log.
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useEffect, useRef, useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link, useNavigate, useParams } from 'react-router'
import { type Device, errorText, imageUrl, type Job } from '../api'
import { authClient } from '../auth'
import { usePresence } from '../live'
import { creditKeys, creditQueries } from '../queries/credits'
import { deviceKeys, deviceMutations, deviceQueries } from '../queries/devices'
import { generationMutations, generationQueries } from '../queries/generation'
import { ago, Button, ErrorState, Field, Loading, Notice, PhotoField } from '../ui'
import { OnlineBadge } from './devices'
import { FirmwareCard, LogsCard } from './device-health'
import { ScheduleCard } from './schedule'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function DevicePage() {
  const { id = '' } = useParams()
  const device = useQuery(deviceQueries.detail(id))
  const presence = usePresence(device.data ? [id] : [])(id)
  const canManage = useCanManage(device.data)
  if (device.isPending) return <Loading what="the frame" />
  if (device.isError) return <ErrorState error={device.error} retry={() => void device.refetch()} />
  const d = device.data
  const shown = d.status?.shownImageId
  return (
    <>
      <p>
        <Link to="/">← All devices</Link>
      </p>
      <h1>{d.name}</h1>
      <div className="card">
        <div className="row">
          <OnlineBadge presence={presence} />
          {d.isSynced ? <span className="badge">in sync</span> : <span className="badge sync">updating</span>}
          <span className="muted">
            {d.status?.battery !== undefined ? `Battery ${Math.round(d.status.battery)} % · ` : ''}seen {ago(d.last_seen_at)} ·{' '}
            {d.display.width}×{d.display.height} {d.display.palette}
          </span>
        </div>
        <h2>Showing now</h2>
        {shown ? (
          <img className="thumb large" src={imageUrl(shown)} alt={`What ${d.name} shows now`} data-image-id={shown} />
        ) : (
          <p className="muted">Nothing yet: generate a picture or send a photo.</p>
        )}
      </div>
      {canManage ? (
        <>
          <Generate device={d} />
          <SendPhoto device={d} />
          <Commands device={d} />
          <Settings device={d} />
        </>
      ) : (
        <Notice>
          You see this frame as a member of its organization: its owner and the organization’s admins send it pictures and commands and
          change it.
        </Notice>
      )}
      <ScheduleCard device={d} canManage={canManage} />
      <FirmwareCard deviceId={id} />
      <LogsCard deviceId={id} />
      <Events deviceId={id} />
    </>
  )
}

/**
 * Whether the signed-in user may change this frame: its owner, or an owner or admin of its
 * organization (the active one). The API decides either way; this only hides what it would refuse.
 */
function useCanManage(device: Device | undefined): boolean {
  const { data: session } = authClient.useSession()
  const member = authClient.useActiveMember()
  if (!device || !session) return false
  if (device.userId === session.user.id) return true
  if (!device.organization_id || member.data?.organizationId !== device.organization_id) return false
  return member.data.role.split(',').some((r) => ['owner', 'admin'].includes(r.trim()))
}

function Generate({ device }: { device: Device }) {
  const queryClient = useQueryClient()
  const models = useQuery(generationQueries.models())
  const credits = useQuery(creditQueries.balance())
  const start = useMutation(generationMutations.start())
  const [job, setJob] = useState<Job | null>(null)
  const mounted = useRef(true)
  useEffect(
    () => () => {
      mounted.current = false
    },
    [],
  )
  const [onFrame, setOnFrame] = useState(false)
  const [error, setError] = useState('')
  const { register, handleSubmit, formState } = useForm<{ text: string; model: string }>({ defaultValues: { text: '', model: 'local' } })
  const submit = handleSubmit(async (v) => {
    setError('')
    setOnFrame(false)
    try {
      let current = await start.mutateAsync({ prompt: { text: v.text.trim() }, deviceId: device.id, model: v.model as 'local' })
      setJob(current)
      // Start, then poll: the job's progress, then the frame's report that it shows the result.
      // At most ten minutes, and not after the page is left.
      for (let i = 0; (current.status === 'queued' || current.status === 'running') && i < 600 && mounted.current; i++) {
        await sleep(1000)
        current = await queryClient.fetchQuery(generationQueries.job(current.id))
        setJob(current)
      }
      if (current.status !== 'succeeded' || !current.result) {
        setError(current.error?.message ?? `The generation ${current.status}.`)
        // A failed job's price is given back.
        void queryClient.invalidateQueries({ queryKey: creditKeys.balance() })
        return
      }
      const imageId = current.result.imageId
      for (let i = 0; i < 120 && mounted.current; i++) {
        const d = await queryClient.fetchQuery(deviceQueries.detail(device.id))
        if (d.status?.shownImageId === imageId) {
          setOnFrame(true)
          void queryClient.invalidateQueries({ queryKey: deviceKeys.list() })
          return
        }
        await sleep(1000)
      }
    } catch (err) {
      setError(errorText(err))
    }
  })
  const price = models.data?.find((m) => m.id === 'local')?.price
  return (
    <section className="card" aria-labelledby="generate-title">
      <h2 id="generate-title">Generate a picture</h2>
      <form onSubmit={submit} noValidate>
        {error ? <Notice kind="error">{error}</Notice> : null}
        <Field label="Prompt" error={formState.errors.text}>
          <textarea
            rows={2}
            {...register('text', { required: 'Describe the picture', maxLength: { value: 1000, message: 'At most 1,000 characters' } })}
          />
        </Field>
        <Field label="Model" hint={credits.data ? `Your balance: ${credits.data.balance} credits` : undefined}>
          <select {...register('model')}>
            {(models.data ?? [{ id: 'local', title: 'Local (free)', price: price ?? '0', available: true }]).map((m) => (
              <option key={m.id} value={m.id} disabled={m.available === false}>
                {m.title ?? m.id} — {Number(m.price) === 0 ? 'free' : `${m.price} credits`}
                {m.available === false ? ' (not configured)' : ''}
              </option>
            ))}
          </select>
        </Field>
        <Button type="submit" busy={formState.isSubmitting}>
          Generate and send
        </Button>
      </form>
      {job ? (
        <div role="status" aria-live="polite">
          <p>
            {job.status === 'succeeded'
              ? onFrame
                ? 'On the frame now.'
                : 'Generated; waiting for the frame to show it…'
              : `${job.status} · ${job.progress} %`}
          </p>
          <progress max={100} value={job.status === 'succeeded' ? (onFrame ? 100 : 95) : job.progress} aria-label="Progress" />
        </div>
      ) : null}
    </section>
  )
}

function SendPhoto({ device }: { device: Device }) {
  const [file, setFile] = useState<File | null>(null)
  const mutation = useMutation(deviceMutations.sendPhoto(device.id))
  return (
    <section className="card" aria-labelledby="photo-title">
      <h2 id="photo-title">Send a photo</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (file) mutation.mutate(file)
        }}
      >
        {mutation.isError ? <Notice kind="error">{errorText(mutation.error)}</Notice> : null}
        {mutation.isSuccess ? <Notice kind="success">Sent. The frame shows it once it has downloaded it.</Notice> : null}
        <PhotoField onPick={setFile} />
        <Button type="submit" busy={mutation.isPending} disabled={!file}>
          Upload and send
        </Button>
      </form>
    </section>
  )
}

type Command = 'identify' | 'refresh' | 'reboot' | 'sleep'

function Commands({ device }: { device: Device }) {
  const [seconds, setSeconds] = useState(600)
  const [sent, setSent] = useState<{ commandId: string; command: Command } | null>(null)
  const command = useMutation(deviceMutations.command(device.id))
  const send = (c: Command) =>
    command.mutate(c === 'sleep' ? { command: c, args: { seconds } } : { command: c }, {
      onSuccess: (res) => setSent({ commandId: res.commandId, command: c }),
    })
  // The acknowledgement is an event of the device (device.ack with the command's id): asked every
  // second until it comes, for at most a minute.
  const ack = useQuery({
    ...deviceQueries.commandAck(device.id, sent?.commandId ?? ''),
    enabled: sent !== null,
    refetchInterval: (q) => (q.state.data || q.state.status === 'error' || q.state.dataUpdateCount >= 60 ? false : 1000),
    retry: false,
  })
  const acked = ack.data === true
  return (
    <section className="card" aria-labelledby="commands-title">
      <h2 id="commands-title">Commands</h2>
      {command.isError ? <Notice kind="error">{errorText(command.error)}</Notice> : null}
      {sent ? (
        <Notice kind={acked ? 'success' : 'info'}>
          {acked ? `The frame acknowledged “${sent.command}”.` : `“${sent.command}” sent; waiting for the frame to acknowledge it…`}
        </Notice>
      ) : null}
      <div className="row">
        {(['identify', 'refresh', 'reboot'] as const).map((c) => (
          <Button key={c} kind="secondary" busy={command.isPending && command.variables?.command === c} onClick={() => send(c)}>
            {c[0]!.toUpperCase() + c.slice(1)}
          </Button>
        ))}
        <label className="row">
          <span>Sleep for</span>
          <input
            type="number"
            min={1}
            max={86400}
            value={seconds}
            onChange={(e) => setSeconds(Number(e.target.value))}
            aria-label="Sleep seconds"
          />
          <span>seconds</span>
        </label>
        <Button kind="secondary" busy={command.isPending && command.variables?.command === 'sleep'} onClick={() => send('sleep')}>
          Sleep
        </Button>
      </div>
    </section>
  )
}

function Settings({ device }: { device: Device }) {
  const navigate = useNavigate()
  const { data: session } = authClient.useSession()
  const [confirming, setConfirming] = useState(false)
  const form = useForm<{ name: string; color: string }>({ defaultValues: { name: device.name, color: device.color } })
  const rename = useMutation(deviceMutations.rename(device.id))
  const disconnect = useMutation(deviceMutations.disconnect(device.id))
  const remove = useMutation(deviceMutations.remove(device.id))
  // Only the owner deletes (an organization's members use its frames; the API refuses them too).
  const isOwner = session?.user.id === device.userId
  return (
    <section className="card" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <form onSubmit={form.handleSubmit((v) => rename.mutate({ name: v.name.trim(), color: v.color }))} noValidate>
        {rename.isError ? <Notice kind="error">{errorText(rename.error)}</Notice> : null}
        {rename.isSuccess ? <Notice kind="success">Saved.</Notice> : null}
        <Field label="Name" error={form.formState.errors.name}>
          <input
            {...form.register('name', { required: 'Give the frame a name', maxLength: { value: 64, message: 'At most 64 characters' } })}
          />
        </Field>
        <Field label="Colour">
          <input type="color" {...form.register('color')} />
        </Field>
        <Button type="submit" busy={rename.isPending}>
          Save
        </Button>
      </form>
      <h2>Connection</h2>
      {disconnect.isError ? <Notice kind="error">{errorText(disconnect.error)}</Notice> : null}
      {disconnect.isSuccess ? <Notice kind="success">Disconnected. The frame must be paired again to come back.</Notice> : null}
      {remove.isError ? <Notice kind="error">{errorText(remove.error)}</Notice> : null}
      <div className="row">
        <Button kind="secondary" busy={disconnect.isPending} onClick={() => disconnect.mutate()}>
          Disconnect
        </Button>
        {isOwner && !confirming ? (
          <Button kind="danger" onClick={() => setConfirming(true)}>
            Delete…
          </Button>
        ) : null}
        {isOwner && confirming ? (
          <>
            <span>Delete {device.name} and its history for good?</span>
            <Button
              kind="danger"
              busy={remove.isPending}
              onClick={() => remove.mutate(undefined, { onSuccess: () => navigate('/', { replace: true }) })}
            >
              Yes, delete
            </Button>
            <Button kind="secondary" onClick={() => setConfirming(false)}>
              Keep it
            </Button>
          </>
        ) : null}
      </div>
    </section>
  )
}

const eventText: Record<string, string> = {
  'device.paired': 'Paired',
  'device.connected': 'Came online',
  'device.disconnected': 'Went offline',
  'device.ack': 'Acknowledged a command',
  'device.credentials_issued': 'Got its credentials',
  'device.credentials_revoked': 'Credentials revoked',
  'device.alert': 'Alert',
  'firmware.offered': 'Offered a firmware update',
  'firmware.progress': 'Firmware update progress',
  'firmware.succeeded': 'Firmware update installed',
  'firmware.failed': 'Firmware update failed',
}

function Events({ deviceId }: { deviceId: string }) {
  const events = useInfiniteQuery(deviceQueries.events(deviceId))
  const list = events.data?.pages.flatMap((p) => p.events) ?? []
  return (
    <section className="card" aria-labelledby="events-title">
      <h2 id="events-title">Events</h2>
      {events.isPending ? <Loading what="events" /> : null}
      {events.isError ? <ErrorState error={events.error} retry={() => void events.refetch()} /> : null}
      {events.isSuccess && list.length === 0 ? <p className="muted">Nothing has happened yet.</p> : null}
      <ul className="events">
        {list.map((e) => (
          <li key={e.id}>
            <span>
              {eventText[e.type] ?? e.type}
              {(e.data as { reason?: string }).reason ? <span className="muted"> ({(e.data as { reason?: string }).reason})</span> : null}
            </span>
            <time className="muted" dateTime={e.created_at}>
              {new Date(e.created_at).toLocaleString()}
            </time>
          </li>
        ))}
      </ul>
      {events.hasNextPage ? (
        <Button kind="secondary" busy={events.isFetchingNextPage} onClick={() => void events.fetchNextPage()}>
          Older events
        </Button>
      ) : null}
    </section>
  )
}
