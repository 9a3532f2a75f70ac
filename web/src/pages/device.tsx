// One frame: what it shows, a prompt to generate (with the model's price and your balance) and
// its progress until the frame shows it, a photo to send, commands and their acknowledgement,
// rename, disconnect, delete, its firmware, logs and event log.
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useEffect, useRef, useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link, useNavigate, useParams } from 'react-router'
import { api, data, type Device, errorText, imageUrl, type Job, uploadPhoto } from '../api'
import { authClient } from '../auth'
import { usePresence } from '../live'
import { ago, Button, ErrorState, Field, Loading, Notice, PhotoField } from '../ui'
import { OnlineBadge } from './devices'
import { FirmwareCard, LogsCard } from './device-health'
import { ScheduleCard } from './schedule'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function DevicePage() {
  const { id = '' } = useParams()
  const device = useQuery({
    queryKey: ['device', id],
    queryFn: async () => data(await api.GET('/api/device/{id}', { params: { path: { id } } })),
    refetchInterval: 30_000,
  })
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
  const models = useQuery({ queryKey: ['models'], queryFn: async () => data(await api.GET('/api/models')).models ?? [] })
  const credits = useQuery({ queryKey: ['credits'], queryFn: async () => data(await api.GET('/api/credits')) })
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
      let current = data(
        await api.POST('/api/generate', {
          body: { prompt: { text: v.text.trim() }, deviceId: device.id, model: v.model as 'local' },
        }),
      )
      setJob(current)
      void queryClient.invalidateQueries({ queryKey: ['credits'] })
      // Start, then poll: the job's progress, then the frame's report that it shows the result.
      // At most ten minutes, and not after the page is left.
      for (let i = 0; (current.status === 'queued' || current.status === 'running') && i < 600 && mounted.current; i++) {
        await sleep(1000)
        current = data(await api.GET('/api/generate/{id}', { params: { path: { id: current.id } } }))
        setJob(current)
      }
      if (current.status !== 'succeeded' || !current.result) {
        setError(current.error?.message ?? `The generation ${current.status}.`)
        void queryClient.invalidateQueries({ queryKey: ['credits'] })
        return
      }
      const imageId = current.result.imageId
      for (let i = 0; i < 120 && mounted.current; i++) {
        const d = data(await api.GET('/api/device/{id}', { params: { path: { id: device.id } } }))
        queryClient.setQueryData(['device', device.id], d)
        if (d.status?.shownImageId === imageId) {
          setOnFrame(true)
          void queryClient.invalidateQueries({ queryKey: ['devices'] })
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
  const mutation = useMutation({
    mutationFn: async (f: File) => {
      const key = await uploadPhoto(f)
      return data(await api.POST('/api/upload/send', { body: { key, deviceId: device.id } }))
    },
  })
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
  const [acked, setAcked] = useState(false)
  const mutation = useMutation({
    mutationFn: async (command: Command) =>
      data(
        await api.POST('/api/device/{id}/command', {
          params: { path: { id: device.id } },
          body: command === 'sleep' ? { command, args: { seconds } } : { command },
        }),
      ),
    onSuccess: (res, command) => {
      setAcked(false)
      setSent({ commandId: res.commandId, command })
    },
  })
  // The acknowledgement is an event of the device (device.ack with the command's id).
  useEffect(() => {
    if (!sent) return
    let stop = false
    void (async () => {
      for (let i = 0; i < 60 && !stop; i++) {
        const res = data(await api.GET('/api/device/{id}/events', { params: { path: { id: device.id }, query: { limit: 50 } } }))
        if (res.events.some((e) => e.type === 'device.ack' && (e.data as { commandId?: string }).commandId === sent.commandId)) {
          if (!stop) setAcked(true)
          return
        }
        await sleep(1000)
      }
    })().catch(() => {})
    return () => {
      stop = true
    }
  }, [sent, device.id])
  return (
    <section className="card" aria-labelledby="commands-title">
      <h2 id="commands-title">Commands</h2>
      {mutation.isError ? <Notice kind="error">{errorText(mutation.error)}</Notice> : null}
      {sent ? (
        <Notice kind={acked ? 'success' : 'info'}>
          {acked ? `The frame acknowledged “${sent.command}”.` : `“${sent.command}” sent; waiting for the frame to acknowledge it…`}
        </Notice>
      ) : null}
      <div className="row">
        {(['identify', 'refresh', 'reboot'] as const).map((c) => (
          <Button key={c} kind="secondary" busy={mutation.isPending && mutation.variables === c} onClick={() => mutation.mutate(c)}>
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
        <Button kind="secondary" busy={mutation.isPending && mutation.variables === 'sleep'} onClick={() => mutation.mutate('sleep')}>
          Sleep
        </Button>
      </div>
    </section>
  )
}

function Settings({ device }: { device: Device }) {
  const queryClient = useQueryClient()
  const navigate = useNavigate()
  const { data: session } = authClient.useSession()
  const [confirming, setConfirming] = useState(false)
  const form = useForm<{ name: string; color: string }>({ defaultValues: { name: device.name, color: device.color } })
  const rename = useMutation({
    mutationFn: async (v: { name: string; color: string }) =>
      data(await api.PATCH('/api/device/{id}', { params: { path: { id: device.id } }, body: { name: v.name.trim(), color: v.color } })),
    onSuccess: (d) => {
      queryClient.setQueryData(['device', device.id], d)
      void queryClient.invalidateQueries({ queryKey: ['devices'] })
    },
  })
  const disconnect = useMutation({
    mutationFn: async () => data(await api.POST('/api/device/disconnect', { body: { deviceId: device.id } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['device', device.id] }),
  })
  const remove = useMutation({
    mutationFn: async () => data(await api.DELETE('/api/device/delete', { body: { deviceId: device.id } })),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['devices'] })
      navigate('/', { replace: true })
    },
  })
  // Only the owner deletes (an organization's members use its frames; the API refuses them too).
  const isOwner = session?.user.id === device.userId
  return (
    <section className="card" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <form onSubmit={form.handleSubmit((v) => rename.mutate(v))} noValidate>
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
            <Button kind="danger" busy={remove.isPending} onClick={() => remove.mutate()}>
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
  const events = useInfiniteQuery({
    queryKey: ['events', deviceId],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      data(
        await api.GET('/api/device/{id}/events', {
          params: { path: { id: deviceId }, query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  })
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
