// A frame's day plan on its page: today as a bar (which playlist when, sleep windows, now), what
// plays now and the next change, and, for those who manage the frame, rules and sleep windows to
// add or remove. Every change is one PUT of the whole plan; the service checks it (overlaps, time
// zone, empty playlists) and its words are shown as they are.
import { useMutation, useQuery } from '@tanstack/react-query'
import { useForm } from 'react-hook-form'
import { Link } from 'react-router'
import { type Device, errorText, type Schedule } from '../api'
import { deviceMutations, deviceQueries } from '../queries/devices'
import { playlistQueries } from '../queries/playlists'
import { Button, Empty, ErrorState, Field, Loading, Notice } from '../ui'

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
type Day = (typeof DAYS)[number]
type Plan = {
  timeZone: string
  rules: Array<{ playlistId: string; days: Day[]; from: string; to: string }>
  sleep: Array<{ from: string; to: string }>
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))
const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'

/** Today's weekday and the minutes since midnight, as the plan's zone sees them. */
function localNow(timeZone: string): { day: Day; minutes: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date())
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '0'
  return { day: get('weekday').toLowerCase().slice(0, 3) as Day, minutes: Number(get('hour')) * 60 + Number(get('minute')) }
}

const localTime = (iso: string, timeZone: string) =>
  new Date(iso).toLocaleTimeString([], { timeZone, hour: '2-digit', minute: '2-digit', weekday: 'short' })

type Segment = { from: number; to: number; label: string; kind: 'rule' | 'sleep' }

/** Today's pieces of each window: those starting today, and the ends of yesterday's that cross midnight. */
function segmentsToday(plan: Plan, names: Map<string, string>, today: Day): Segment[] {
  const yesterday = DAYS[(DAYS.indexOf(today) + 6) % 7]!
  const out: Segment[] = []
  const add = (from: string, to: string, label: string, kind: Segment['kind'], startsToday: boolean, endsYesterday: boolean) => {
    const a = minutesOf(from)
    const b = to === '24:00' ? 1440 : minutesOf(to)
    const crosses = b <= a
    if (startsToday) out.push({ from: a, to: crosses ? 1440 : b, label, kind })
    if (endsYesterday && crosses) out.push({ from: 0, to: b, label, kind })
  }
  for (const r of plan.rules)
    add(r.from, r.to, names.get(r.playlistId) ?? 'a playlist', 'rule', r.days.includes(today), r.days.includes(yesterday))
  for (const s of plan.sleep) add(s.from, s.to, 'asleep', 'sleep', true, true)
  return out
}

export function ScheduleCard({ device, canManage }: { device: Device; canManage: boolean }) {
  const schedule = useQuery(deviceQueries.schedule(device.id))
  const playlists = useQuery(playlistQueries.list())
  const save = useMutation(deviceMutations.saveSchedule(device.id))
  const names = new Map((playlists.data ?? []).map((p) => [p.id, p.name]))
  const s = schedule.data
  const plan: Plan = s
    ? { timeZone: s.timeZone, rules: s.rules as Plan['rules'], sleep: s.sleep }
    : { timeZone: browserZone(), rules: [], sleep: [] }
  const change = (next: Partial<Plan>) => save.mutate({ ...plan, ...next })
  return (
    <section className="card" aria-labelledby="schedule-title">
      <h2 id="schedule-title">Day plan</h2>
      {schedule.isPending ? <Loading what="the day plan" /> : null}
      {schedule.isError ? <ErrorState error={schedule.error} retry={() => void schedule.refetch()} /> : null}
      {save.isError ? <Notice kind="error">{errorText(save.error)}</Notice> : null}
      {schedule.isSuccess && !s ? (
        <Empty>
          No day plan: the frame shows what it is sent. {canManage ? <>Add a playlist for some hours of the day below.</> : null}
        </Empty>
      ) : null}
      {s ? <DayView schedule={s} plan={plan} names={names} /> : null}
      {s && (plan.rules.length || plan.sleep.length) ? (
        <ul className="events" aria-label="Rules and sleep windows">
          {plan.rules.map((r, i) => (
            <li key={`${r.playlistId}@${r.from}-${r.to}:${r.days.join()}`}>
              <span>
                {names.get(r.playlistId) ?? 'A playlist'} · {r.from}–{r.to} · {r.days.length === 7 ? 'every day' : r.days.join(', ')}
              </span>
              {canManage ? (
                <Button kind="secondary" onClick={() => change({ rules: plan.rules.filter((_, j) => j !== i) })}>
                  Remove
                </Button>
              ) : null}
            </li>
          ))}
          {plan.sleep.map((w, i) => (
            <li key={`${w.from}-${w.to}`}>
              <span>
                Asleep {w.from}–{w.to} every day
              </span>
              {canManage ? (
                <Button kind="secondary" onClick={() => change({ sleep: plan.sleep.filter((_, j) => j !== i) })}>
                  Remove
                </Button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      {canManage ? (
        <>
          <AddRule
            playlists={playlists.data ?? []}
            busy={save.isPending}
            onAdd={(rule, timeZone) => save.mutate({ ...plan, timeZone, rules: [...plan.rules, rule] })}
            zone={plan.timeZone}
          />
          <AddSleep busy={save.isPending} onAdd={(w) => change({ sleep: [...plan.sleep, w] })} />
          {s ? (
            <Button kind="secondary" onClick={() => save.mutate(null)}>
              Remove the day plan
            </Button>
          ) : null}
        </>
      ) : null}
    </section>
  )
}

function DayView({ schedule, plan, names }: { schedule: Schedule; plan: Plan; names: Map<string, string> }) {
  const now = localNow(plan.timeZone)
  const segments = segmentsToday(plan, names, now.day)
  const pct = (m: number) => `${((m / 1440) * 100).toFixed(2)}%`
  const state =
    schedule.now.state === 'sleeping'
      ? `Asleep until ${localTime(schedule.now.sleepingUntil!, plan.timeZone)}`
      : schedule.now.state === 'playing'
        ? `Playing ${names.get(schedule.now.playlistId ?? '') ?? 'a playlist'}`
        : 'Nothing planned right now'
  return (
    <>
      <p data-testid="schedule-now">
        {state}
        {schedule.nextChangeAt ? ` · next change ${localTime(schedule.nextChangeAt, plan.timeZone)}` : ''}{' '}
        <span className="muted">({plan.timeZone})</span>
      </p>
      <div
        className="dayview"
        role="img"
        aria-label={`Today: ${segments.map((g) => `${g.label} ${hhmm(g.from)}–${hhmm(g.to)}`).join(', ') || 'nothing planned'}`}
      >
        {segments.map((g) => (
          <span
            key={`${g.kind}${g.from}`}
            className={`segment ${g.kind}`}
            style={{ left: pct(g.from), width: pct(g.to - g.from) }}
            title={`${g.label} ${hhmm(g.from)}–${hhmm(g.to)}`}
          >
            {g.label}
          </span>
        ))}
        <span className="nowline" style={{ left: pct(now.minutes) }} />
      </div>
      <div className="dayview-scale" aria-hidden="true">
        <span>00:00</span>
        <span>06:00</span>
        <span>12:00</span>
        <span>18:00</span>
        <span>24:00</span>
      </div>
    </>
  )
}

const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`

type RuleForm = { playlistId: string; from: string; to: string; timeZone: string } & Record<Day, boolean>

function AddRule({
  playlists,
  busy,
  onAdd,
  zone,
}: {
  playlists: Array<{ id: string; name: string; items: unknown[] }>
  busy: boolean
  onAdd: (rule: Plan['rules'][number], timeZone: string) => void
  zone: string
}) {
  const form = useForm<RuleForm>({
    defaultValues: { from: '07:00', to: '22:00', timeZone: zone, ...Object.fromEntries(DAYS.map((d) => [d, true])) },
  })
  if (!playlists.length)
    return (
      <p>
        <Link to="/playlists">Make a playlist</Link> to plan this frame's day.
      </p>
    )
  return (
    <form
      aria-label="Add a playlist to the day plan"
      onSubmit={form.handleSubmit((v) =>
        onAdd({ playlistId: v.playlistId, from: v.from, to: v.to, days: DAYS.filter((d) => v[d]) }, v.timeZone),
      )}
    >
      <h3>Play a playlist</h3>
      <Field label="Playlist">
        <select {...form.register('playlistId', { required: true })}>
          {playlists.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name} ({p.items.length})
            </option>
          ))}
        </select>
      </Field>
      <fieldset className="days">
        <legend>Days</legend>
        {DAYS.map((d) => (
          <label key={d}>
            <input type="checkbox" {...form.register(d)} /> {d}
          </label>
        ))}
      </fieldset>
      <div className="row">
        <Field label="From">
          <input type="time" {...form.register('from', { required: true })} />
        </Field>
        <Field label="To" hint="Before From: ends the next day">
          <input type="time" {...form.register('to', { required: true })} />
        </Field>
      </div>
      <Field label="Time zone" hint="IANA name, e.g. Europe/Berlin">
        <input {...form.register('timeZone', { required: true })} />
      </Field>
      <Button type="submit" busy={busy}>
        Add to the day plan
      </Button>
    </form>
  )
}

function AddSleep({ busy, onAdd }: { busy: boolean; onAdd: (w: { from: string; to: string }) => void }) {
  const form = useForm<{ from: string; to: string }>({ defaultValues: { from: '23:00', to: '06:30' } })
  return (
    <form aria-label="Add a sleep window" onSubmit={form.handleSubmit(onAdd)}>
      <h3>Sleep every night</h3>
      <div className="row">
        <Field label="Sleep from">
          <input type="time" {...form.register('from', { required: true })} />
        </Field>
        <Field label="Wake at">
          <input type="time" {...form.register('to', { required: true })} />
        </Field>
      </div>
      <Button type="submit" kind="secondary" busy={busy}>
        Add sleep window
      </Button>
    </form>
  )
}
