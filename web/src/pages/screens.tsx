// Screens: the list with a form for a new one (/screens), and the editor (/screens/:id): the
// template, its variables and renderer, previewed as you type as the chosen frame would show them
// (its size, inks and dithering) and saved only with Save, since saving sends the screen to every
// frame showing it; the screen's last error, "show now", adding it to a playlist, its data source
// and webhook.
import { useMutation, useQuery } from '@tanstack/react-query'
import { useEffect, useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link, useBlocker, useNavigate, useParams } from 'react-router'
import { errorText, type Screen } from '../api'
import { deviceQueries } from '../queries/devices'
import { playlistMutations, playlistQueries } from '../queries/playlists'
import { type ScreenCreate, type ScreenDraft, screenMutations, screenQueries, screenVersion } from '../queries/screens'
import { ago, Button, Empty, ErrorState, Field, Loading, Notice } from '../ui'

/** The built-in screens the service draws (src/screens/builtin), and the source each reads. */
const builtins: Record<string, { label: string; source: 'none' | 'ics' | 'json' }> = {
  clock: { label: 'Clock: the date and time', source: 'none' },
  calendar: { label: 'Calendar: a month from an ICS feed', source: 'ics' },
  'frame-status': { label: 'Frame status: battery, signal, last seen', source: 'none' },
  weather: { label: 'Weather: from an Open-Meteo style JSON URL', source: 'json' },
}

type RendererName = Screen['renderer']

/** In the order offered; the first is the service's default. */
const renderers: Record<RendererName, string> = {
  takumi: 'Takumi: no browser, flexbox layout (the default, fast)',
  chromium: 'Chromium: full CSS (grid, ::before, floats), slower',
}
const rendererNames = Object.keys(renderers) as RendererName[]
const rendererShort: Record<RendererName, string> = { takumi: 'Takumi', chromium: 'Chromium' }

/**
 * The renderer choice. What the server cannot draw with (Chromium where it is not installed) is
 * offered disabled with the server's reason, so it is said before a save is refused; should that
 * list not load, the 422 a save or preview gets is shown where it happens.
 */
function RendererField({ value, onChange }: { value: RendererName; onChange: (r: RendererName) => void }) {
  const offered = useQuery(screenQueries.renderers())
  const lacking = offered.data?.filter((r) => !r.available) ?? []
  return (
    <Field
      label="Renderer"
      hint={
        lacking.length
          ? lacking.map((r) => r.reason ?? `${rendererShort[r.name]} is not offered on this server.`).join(' ')
          : 'Chromium only for templates that need CSS Takumi does not draw'
      }
    >
      <select value={value} onChange={(e) => onChange(e.target.value as RendererName)}>
        {rendererNames.map((name) => {
          const unavailable = lacking.some((r) => r.name === name)
          return (
            <option key={name} value={name} disabled={unavailable}>
              {renderers[name]}
              {unavailable ? ' (not installed on this server)' : ''}
            </option>
          )
        })}
      </select>
    </Field>
  )
}

const SAMPLE_TEMPLATE = '<div class="box">\n  <h1>{{ title }}</h1>\n  <p>{{ data.message | default: "No data yet" }}</p>\n</div>'
const SAMPLE_CSS = '.box { padding: 32px; font-size: 32px; }\nh1 { font-size: 64px; margin: 0 0 16px; }'

/** Variables as typed: a JSON object, or the reason it is not one. */
function parseVariables(text: string): Record<string, unknown> | string {
  if (!text.trim()) return {}
  try {
    const v: unknown = JSON.parse(text)
    return v && typeof v === 'object' && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : 'Variables are a JSON object: { "name": value }'
  } catch (err) {
    return `Variables are not JSON: ${(err as Error).message}`
  }
}

/** "Name: value" lines as headers, or the line that is not one. */
function parseHeaders(text: string): Record<string, string> | string {
  const out: Record<string, string> = {}
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    const at = line.indexOf(':')
    if (at < 1) return `"${line.trim()}" is not "Name: value"`
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim()
  }
  return out
}

const minutesOf = (s: number) => (s % 60 === 0 ? `${s / 60} min` : `${s} s`)

export function ScreensPage() {
  const screens = useQuery(screenQueries.list())
  return (
    <>
      <h1>Screens</h1>
      <p className="muted">A screen is drawn from a template and live data at each frame's size, and drawn again when its data changes.</p>
      <section className="card" aria-labelledby="screens-title">
        <h2 id="screens-title">Your screens</h2>
        {screens.isPending ? <Loading what="screens" /> : null}
        {screens.isError ? <ErrorState error={screens.error} retry={() => void screens.refetch()} /> : null}
        {screens.data?.length === 0 ? <Empty>No screens yet. Make one below from a template or a built-in screen.</Empty> : null}
        <ul className="events">
          {screens.data?.map((s) => (
            <li key={s.id}>
              <Link to={`/screens/${s.id}`}>{s.name}</Link>
              <span className="muted">
                {s.builtin ? `built-in ${s.builtin}` : 'template'} · {rendererShort[s.renderer]}
                {s.source ? ` · data every ${minutesOf(s.source.everySeconds)}` : ''} · data {ago(s.dataAt)}
              </span>
              {s.lastError ? <span className="badge sync">failing: {s.lastError.code}</span> : null}
            </li>
          ))}
        </ul>
      </section>
      <NewScreen />
      <ImportRecipe />
    </>
  )
}

type NewScreenForm = {
  name: string
  kind: string
  template: string
  css: string
  variables: string
  url: string
  everyMinutes: number
  headers: string
  renderer: RendererName
}

function NewScreen() {
  const form = useForm<NewScreenForm>({
    defaultValues: {
      kind: 'template',
      template: SAMPLE_TEMPLATE,
      css: SAMPLE_CSS,
      variables: '{\n  "title": "Hello"\n}',
      everyMinutes: 15,
      renderer: 'takumi',
    },
  })
  const create = useMutation(screenMutations.create())
  const kind = form.watch('kind')
  const needsUrl = kind !== 'template' && builtins[kind]?.source !== 'none'
  const submit = form.handleSubmit((v) => {
    const variables = parseVariables(v.variables)
    if (typeof variables === 'string') return form.setError('variables', { message: variables })
    const headers = parseHeaders(v.headers ?? '')
    if (typeof headers === 'string') return form.setError('headers', { message: headers })
    const body: ScreenCreate = {
      name: v.name.trim(),
      variables,
      renderer: v.renderer,
      ...(kind === 'template' ? { template: v.template, ...(v.css.trim() ? { css: v.css } : {}) } : { builtin: kind }),
      ...(v.url?.trim()
        ? {
            source: {
              url: v.url.trim(),
              everySeconds: Math.round(v.everyMinutes * 60),
              ...(Object.keys(headers).length ? { headers } : {}),
            },
          }
        : {}),
    }
    create.mutate(body, { onSuccess: () => form.reset({ ...form.getValues(), name: '', headers: '' }) })
  })
  return (
    <section className="card" aria-labelledby="new-screen-title">
      <h2 id="new-screen-title">New screen</h2>
      {create.data ? <Created screen={create.data} token={create.data.token} /> : null}
      <form onSubmit={submit} noValidate>
        {create.isError ? <Notice kind="error">{errorText(create.error)}</Notice> : null}
        <Field label="Screen name" error={form.formState.errors.name}>
          <input {...form.register('name', { required: 'Give it a name', maxLength: { value: 100, message: 'At most 100 characters' } })} />
        </Field>
        <Field label="Drawn from">
          <select {...form.register('kind')}>
            <option value="template">A Liquid template</option>
            {Object.entries(builtins).map(([id, b]) => (
              <option key={id} value={id}>
                Built-in: {b.label}
              </option>
            ))}
          </select>
        </Field>
        {kind === 'template' ? (
          <>
            <Field
              label="Template"
              error={form.formState.errors.template}
              hint="Liquid producing HTML: {{ variables }} and {{ data.field }}"
            >
              <textarea className="code" rows={8} spellCheck={false} {...form.register('template', { required: 'Write the template' })} />
            </Field>
            <Field label="CSS" hint="Optional: the stylesheet for its classes">
              <textarea className="code" rows={4} spellCheck={false} {...form.register('css')} />
            </Field>
          </>
        ) : null}
        <RendererField value={form.watch('renderer')} onChange={(r) => form.setValue('renderer', r)} />
        <Field label="Variables (JSON)" error={form.formState.errors.variables} hint="Values the template reads by name">
          <textarea className="code" rows={3} spellCheck={false} {...form.register('variables')} />
        </Field>
        <Field
          label={needsUrl ? `Data URL (${builtins[kind]?.source === 'ics' ? 'an ICS feed' : 'JSON'})` : 'Data URL (optional)'}
          error={form.formState.errors.url}
          hint="Fetched on an interval; its answer is the template's data. Or push data with the webhook."
        >
          <input
            type="url"
            {...form.register('url', {
              validate: (u) => (needsUrl && !u?.trim() ? 'This screen reads a data URL' : true),
            })}
          />
        </Field>
        <Field label="Fetch every (minutes)" error={form.formState.errors.everyMinutes}>
          <input
            type="number"
            min={1}
            step={1}
            {...form.register('everyMinutes', { valueAsNumber: true, min: { value: 1, message: 'At least 1 minute' } })}
          />
        </Field>
        <Field
          label="Headers for the data URL"
          error={form.formState.errors.headers}
          hint="One &quot;Name: value&quot; a line (an API key). Stored encrypted; the values are never shown again."
        >
          <textarea className="code" rows={2} spellCheck={false} autoComplete="off" {...form.register('headers')} />
        </Field>
        <Button type="submit" busy={create.isPending}>
          Create screen
        </Button>
      </form>
    </section>
  )
}

/** A TRMNL recipe as trmnlp keeps it: its src/ files (settings.yml, full.liquid, shared.liquid) picked together. */
function ImportRecipe() {
  const [files, setFiles] = useState<File[]>([])
  const [name, setName] = useState('')
  const [renderer, setRenderer] = useState<RendererName>('takumi')
  const importing = useMutation(screenMutations.importRecipe())
  const submit = async () => {
    const texts = Object.fromEntries(await Promise.all(files.map(async (f) => [f.webkitRelativePath || f.name, await f.text()] as const)))
    importing.mutate({ files: texts, renderer, ...(name.trim() ? { name: name.trim() } : {}) })
  }
  return (
    <section className="card" aria-labelledby="recipe-title">
      <h2 id="recipe-title">Import a TRMNL recipe</h2>
      {importing.isError ? <Notice kind="error">{errorText(importing.error)}</Notice> : null}
      {importing.data ? <Created screen={importing.data} token={importing.data.token} /> : null}
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void submit()
        }}
      >
        <Field label="Recipe files" hint="From the recipe's src/ folder: settings.yml, full.liquid and shared.liquid if it has one">
          <input type="file" multiple accept=".liquid,.yml,.yaml" onChange={(e) => setFiles([...(e.target.files ?? [])])} />
        </Field>
        <Field label="Name" hint="Optional: the recipe's own name otherwise">
          <input value={name} maxLength={100} onChange={(e) => setName(e.target.value)} />
        </Field>
        <RendererField value={renderer} onChange={setRenderer} />
        <Button type="submit" kind="secondary" busy={importing.isPending} disabled={files.length === 0}>
          Import recipe
        </Button>
      </form>
    </section>
  )
}

/** The webhook line to push data, with the token when it is known (right after creation). */
function curlLine(id: string, token: string) {
  return `curl -X POST '${window.location.origin}/api/screens/${id}/data' -H 'Authorization: Bearer ${token}' -H 'Content-Type: application/json' -d '{"message": "Hello from the webhook"}'`
}

function CopyButton({ text, what }: { text: string; what: string }) {
  const [copied, setCopied] = useState<'yes' | 'no' | undefined>()
  const copy = () =>
    navigator.clipboard.writeText(text).then(
      () => setCopied('yes'),
      () => setCopied('no'),
    )
  return (
    <>
      <Button kind="secondary" onClick={() => void copy()}>
        Copy {what}
      </Button>
      <span role="status" className="muted">
        {copied === 'yes' ? 'Copied.' : copied === 'no' ? 'This browser refused the clipboard: select the text and copy it.' : ''}
      </span>
    </>
  )
}

/** A webhook token, shown this once (the service keeps only its hash). */
function TokenOnce({ id, token }: { id: string; token: string }) {
  return (
    <div className="token-once">
      <p>
        The webhook token, shown <strong>only now</strong>:
      </p>
      <code className="token" data-testid="webhook-token">
        {token}
      </code>
      <div className="row">
        <CopyButton text={token} what="token" />
      </div>
      <p>Push data (JSON becomes the template's data):</p>
      <pre className="code">{curlLine(id, token)}</pre>
      <div className="row">
        <CopyButton text={curlLine(id, token)} what="curl line" />
      </div>
    </div>
  )
}

function Created({ screen, token }: { screen: Screen; token: string }) {
  return (
    <Notice kind="success">
      <p>
        <strong>{screen.name}</strong> is created. <Link to={`/screens/${screen.id}`}>Edit it and see its preview</Link>.
      </p>
      <TokenOnce id={screen.id} token={token} />
    </Notice>
  )
}

export function ScreenPage() {
  const { id = '' } = useParams()
  const screen = useQuery(screenQueries.detail(id))
  if (screen.isPending) return <Loading what="the screen" />
  if (screen.isError) return <ErrorState error={screen.error} retry={() => void screen.refetch()} />
  const s = screen.data
  return (
    <>
      <p>
        <Link to="/screens">← All screens</Link>
      </p>
      <h1>{s.name}</h1>
      <p className="muted" data-testid="screen-renderer">
        Drawn by {rendererShort[s.renderer]}.
      </p>
      {s.lastError ? (
        <Notice kind="error">
          <strong>The screen fails ({s.lastError.code}):</strong> {s.lastError.message}{' '}
          <span className="muted">({ago(s.lastError.at)}; frames keep their last good picture)</span>
        </Notice>
      ) : null}
      <ScreenEditor key={s.id} screen={s} />
      <Use screen={s} />
      <Data screen={s} />
      <Remove screen={s} />
    </>
  )
}

/** How long typing must pause before the draft is drawn: a preview a keystroke would waste the render pool. */
const DRAW_AFTER_MS = 400

/** `value` once it has stayed the same for `ms` (compared as JSON, so a new but equal object is no change). */
function useSettled<T>(value: T, ms: number): T {
  const text = JSON.stringify(value)
  const [settled, setSettled] = useState(text)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(text), ms)
    return () => clearTimeout(timer)
  }, [text, ms])
  return JSON.parse(settled) as T
}

/** The editor's fields as typed, what saving would change, and the draft the preview draws. */
function useDraft(s: Screen) {
  const [name, setName] = useState(s.name)
  const [template, setTemplate] = useState(s.template ?? '')
  const [css, setCss] = useState(s.css ?? '')
  const [variables, setVariables] = useState(JSON.stringify(s.variables, null, 2))
  const [renderer, setRenderer] = useState<RendererName>(s.renderer)
  const parsed = parseVariables(variables)
  const valid = Boolean(name.trim()) && (Boolean(s.builtin) || Boolean(template)) && typeof parsed !== 'string'
  const changes = {
    ...(name.trim() && name.trim() !== s.name ? { name: name.trim() } : {}),
    ...(!s.builtin && template && template !== (s.template ?? '') ? { template } : {}),
    ...(!s.builtin && css !== (s.css ?? '') ? { css } : {}),
    ...(typeof parsed !== 'string' && JSON.stringify(parsed) !== JSON.stringify(s.variables) ? { variables: parsed } : {}),
    ...(renderer !== s.renderer ? { renderer } : {}),
  }
  // While a field is invalid (an empty template, variables mid-edit) the last valid draft stays drawn.
  const [lastValid, setLastValid] = useState<ScreenDraft>({})
  const current: ScreenDraft = {
    renderer,
    ...(!s.builtin && template ? { template, css } : {}),
    ...(typeof parsed !== 'string' ? { variables: parsed } : {}),
  }
  const currentText = JSON.stringify(current)
  useEffect(() => {
    if (valid) setLastValid(JSON.parse(currentText))
  }, [valid, currentText])
  return {
    fields: { name, template, css, variables, parsed, renderer },
    set: { name: setName, template: setTemplate, css: setCss, variables: setVariables, renderer: setRenderer },
    changes,
    dirty: Object.keys(changes).length > 0,
    valid,
    draft: useSettled(valid ? current : lastValid, DRAW_AFTER_MS),
  }
}

type Draft = ReturnType<typeof useDraft>

/**
 * Unsaved changes are not lost by leaving unawares: the browser asks before the tab closes or
 * reloads, and the page before another of the console's pages opens (a deleted screen just goes).
 */
function useLeaveGuard(dirty: boolean) {
  useEffect(() => {
    if (!dirty) return
    const ask = (e: BeforeUnloadEvent) => e.preventDefault()
    window.addEventListener('beforeunload', ask)
    return () => window.removeEventListener('beforeunload', ask)
  }, [dirty])
  return useBlocker(
    ({ currentLocation, nextLocation }) =>
      dirty && currentLocation.pathname !== nextLocation.pathname && !(nextLocation.state as { deleted?: boolean } | null)?.deleted,
  )
}

/** The editor and the preview of its draft, side by side. */
function ScreenEditor({ screen: s }: { screen: Screen }) {
  const draft = useDraft(s)
  const blocker = useLeaveGuard(draft.dirty)
  return (
    <>
      {blocker.state === 'blocked' ? (
        <Notice kind="error">
          <p>
            <strong>{s.name} has unsaved changes.</strong> Leave without saving them?
          </p>
          <div className="row">
            <Button kind="danger" onClick={() => blocker.proceed()}>
              Leave without saving
            </Button>
            <Button kind="secondary" onClick={() => blocker.reset()}>
              Stay
            </Button>
          </div>
        </Notice>
      ) : null}
      <div className="screen-editor">
        <Editor screen={s} draft={draft} />
        <Preview screen={s} draft={draft.draft} dirty={draft.dirty} />
      </div>
    </>
  )
}

/**
 * The template, its CSS, variables and renderer. The preview draws them as typed; Save sends them to the
 * frames showing the screen, so a half-typed draft never reaches a frame (nor wakes one up).
 */
function Editor({ screen: s, draft }: { screen: Screen; draft: Draft }) {
  const { fields, set, changes, dirty, valid } = draft
  const patch = useMutation(screenMutations.patch(s.id))
  const state = patch.isPending
    ? 'Saving…'
    : dirty
      ? 'Unsaved changes: the frames show the saved screen until you save.'
      : patch.isSuccess
        ? 'Saved: the frames showing this screen get it now.'
        : ''
  return (
    <section className="card" aria-labelledby="editor-title">
      <h2 id="editor-title">{s.builtin ? `Built-in screen: ${s.builtin}` : 'Template'}</h2>
      <p className="muted">The preview draws what you type. Frames showing this screen get it when you save.</p>
      {patch.isError ? <Notice kind="error">{errorText(patch.error)}</Notice> : null}
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (dirty && valid) patch.mutate(changes)
        }}
      >
        <Field label="Name" error={!fields.name.trim() ? { type: 'required', message: 'Give it a name' } : undefined}>
          <input value={fields.name} maxLength={100} onChange={(e) => set.name(e.target.value)} />
        </Field>
        {s.builtin ? (
          <p>{builtins[s.builtin]?.label ?? s.builtin}. Its variables change how it looks.</p>
        ) : (
          <>
            <Field
              label="Liquid template"
              error={!fields.template ? { type: 'required', message: 'A template cannot be empty' } : undefined}
              hint="{{ name }} reads a variable or a field of the data; {{ data }} is the data itself; {{ device.width }} the frame"
            >
              <textarea
                className="code"
                rows={14}
                spellCheck={false}
                value={fields.template}
                onChange={(e) => set.template(e.target.value)}
              />
            </Field>
            <Field label="CSS">
              <textarea className="code" rows={5} spellCheck={false} value={fields.css} onChange={(e) => set.css(e.target.value)} />
            </Field>
          </>
        )}
        <RendererField value={fields.renderer} onChange={set.renderer} />
        <Field
          label="Variables (JSON)"
          error={typeof fields.parsed === 'string' ? { type: 'validate', message: fields.parsed } : undefined}
        >
          <textarea className="code" rows={4} spellCheck={false} value={fields.variables} onChange={(e) => set.variables(e.target.value)} />
        </Field>
        <div className="row">
          <Button type="submit" busy={patch.isPending} disabled={!dirty || !valid}>
            Save
          </Button>
          <span className="muted" role="status" aria-live="polite">
            {state}
          </span>
        </div>
      </form>
    </section>
  )
}

const DEFAULT_PANEL = { width: 800, height: 480, palette: 'bw' }

/** The frame whose preview is shown and to which "show now" sends, shared by both sections. */
function useChosenFrame() {
  const devices = useQuery(deviceQueries.list())
  const [chosen, setChosen] = useState<string | undefined>()
  const list = devices.data ?? []
  const device = list.find((d) => d.id === chosen) ?? list[0]
  return { devices, device, choose: setChosen }
}

function Preview({ screen: s, draft, dirty }: { screen: Screen; draft: ScreenDraft; dirty: boolean }) {
  const { devices, device, choose } = useChosenFrame()
  const preview = useQuery({
    ...screenQueries.preview(s.id, { ...draft, ...(device ? { deviceId: device.id } : {}) }, screenVersion(s)),
    enabled: !devices.isPending,
    // While the next draft draws, the last one stays in view.
    placeholderData: (prev) => prev,
  })
  const [url, setUrl] = useState<string | undefined>()
  useEffect(() => {
    if (!preview.data) return
    const u = URL.createObjectURL(preview.data)
    setUrl(u)
    return () => URL.revokeObjectURL(u)
  }, [preview.data])
  const panel = device?.display ?? DEFAULT_PANEL
  return (
    <section className="card" aria-labelledby="preview-title">
      <h2 id="preview-title">Preview</h2>
      {devices.isError ? <ErrorState error={devices.error} retry={() => void devices.refetch()} /> : null}
      <FramePicker devices={devices.data ?? []} device={device} choose={choose} />
      <p className="muted">
        {panel.width}×{panel.height}, {panel.palette} panel: what the frame would show{dirty ? ' once saved' : ''}, converted to its inks.
        {preview.isFetching ? ' Drawing…' : ''}
      </p>
      {preview.isError ? (
        <Notice kind="error">
          <strong>The preview cannot be drawn:</strong> {errorText(preview.error)}
        </Notice>
      ) : null}
      {preview.isPending && !preview.isError ? <Loading what="the preview" /> : null}
      {url ? (
        <img
          className={`preview${preview.isError ? ' stale' : ''}`}
          src={url}
          width={panel.width}
          height={panel.height}
          alt={`${s.name} as ${device?.name ?? 'a frame'} would show it`}
        />
      ) : null}
      <div className="row">
        <Button kind="secondary" busy={preview.isFetching} onClick={() => void preview.refetch()}>
          Draw again
        </Button>
      </div>
      <ShowNow screen={s} device={device} dirty={dirty} />
    </section>
  )
}

type Frame = { id: string; name: string; display: { width: number; height: number; palette: string } }

function FramePicker({ devices, device, choose }: { devices: Frame[]; device: Frame | undefined; choose: (id: string) => void }) {
  if (devices.length === 0) return <Empty>No frames yet: the preview is for an 800×480 black-and-white panel.</Empty>
  return (
    <Field label="Frame">
      <select value={device?.id} onChange={(e) => choose(e.target.value)}>
        {devices.map((d) => (
          <option key={d.id} value={d.id}>
            {d.name} ({d.display.width}×{d.display.height} {d.display.palette})
          </option>
        ))}
      </select>
    </Field>
  )
}

function ShowNow({ screen: s, device, dirty }: { screen: Screen; device: Frame | undefined; dirty: boolean }) {
  const show = useMutation(screenMutations.show(s.id))
  if (!device) return null
  return (
    <>
      {dirty ? <p className="muted">Show now sends the saved screen: save first to send your changes.</p> : null}
      {show.isError ? <Notice kind="error">{errorText(show.error)}</Notice> : null}
      {show.isSuccess && show.variables === device.id ? (
        <Notice kind="success">Sent to {device.name}. It now follows this screen: new data, new picture.</Notice>
      ) : null}
      <Button busy={show.isPending} onClick={() => show.mutate(device.id)}>
        Show now on {device.name}
      </Button>
    </>
  )
}

function Use({ screen: s }: { screen: Screen }) {
  const lists = useQuery(playlistQueries.list())
  const add = useMutation(playlistMutations.addScreen())
  const [chosen, setChosen] = useState<string | undefined>()
  const playlist = lists.data?.find((p) => p.id === chosen) ?? lists.data?.[0]
  return (
    <section className="card" aria-labelledby="use-title">
      <h2 id="use-title">In a playlist</h2>
      {lists.isPending ? <Loading what="playlists" /> : null}
      {lists.isError ? <ErrorState error={lists.error} retry={() => void lists.refetch()} /> : null}
      {lists.data?.length === 0 ? (
        <Empty>
          No playlists yet. <Link to="/playlists">Make one</Link>, then add this screen to it here.
        </Empty>
      ) : null}
      {add.isError ? <Notice kind="error">{errorText(add.error)}</Notice> : null}
      {add.isSuccess ? (
        <Notice kind="success">
          Added to <Link to={`/playlists/${add.data.id}`}>{add.data.name}</Link>: drawn each time it comes up.
        </Notice>
      ) : null}
      {playlist ? (
        <div className="row">
          <Field label="Playlist">
            <select value={playlist.id} onChange={(e) => setChosen(e.target.value)}>
              {lists.data?.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </Field>
          <Button busy={add.isPending} onClick={() => add.mutate({ playlistId: playlist.id, screenId: s.id })}>
            Add to playlist
          </Button>
        </div>
      ) : null}
    </section>
  )
}

/** Where the data comes from: the URL (its headers' names only), and the webhook. */
function Data({ screen: s }: { screen: Screen }) {
  const rotate = useMutation(screenMutations.rotateToken(s.id))
  const patch = useMutation(screenMutations.patch(s.id))
  const form = useForm<{ url: string; everyMinutes: number; headers: string }>({
    defaultValues: { url: s.source?.url ?? '', everyMinutes: s.source ? Math.max(1, Math.round(s.source.everySeconds / 60)) : 15 },
  })
  const submit = form.handleSubmit((v) => {
    const headers = parseHeaders(v.headers ?? '')
    if (typeof headers === 'string') return form.setError('headers', { message: headers })
    patch.mutate(
      v.url.trim()
        ? {
            source: {
              url: v.url.trim(),
              everySeconds: Math.round(v.everyMinutes * 60),
              ...(Object.keys(headers).length ? { headers } : {}),
            },
          }
        : { source: null },
      { onSuccess: () => form.setValue('headers', '') },
    )
  })
  return (
    <section className="card" aria-labelledby="data-title">
      <h2 id="data-title">Data</h2>
      <p>
        Data last arrived {ago(s.dataAt)}; last drawn for a frame {ago(s.renderedAt)}.
      </p>
      <h3>From a URL</h3>
      {patch.isError ? <Notice kind="error">{errorText(patch.error)}</Notice> : null}
      {patch.isSuccess ? <Notice kind="success">Saved: it is fetched now.</Notice> : null}
      <form onSubmit={submit} noValidate>
        <Field label="Data URL" hint="Left empty, the screen has no URL (the webhook still works)">
          <input type="url" {...form.register('url')} />
        </Field>
        <Field label="Fetch every (minutes)" error={form.formState.errors.everyMinutes}>
          <input
            type="number"
            min={1}
            step={1}
            {...form.register('everyMinutes', { valueAsNumber: true, min: { value: 1, message: 'At least 1 minute' } })}
          />
        </Field>
        <Field
          label="Headers"
          error={form.formState.errors.headers}
          hint={
            s.source?.headerNames.length
              ? `Stored, values never shown: ${s.source.headerNames.join(', ')}. Saving replaces them: enter them again to keep them.`
              : 'One "Name: value" a line. Stored encrypted; the values are never shown again.'
          }
        >
          <textarea className="code" rows={2} spellCheck={false} autoComplete="off" {...form.register('headers')} />
        </Field>
        <Button type="submit" kind="secondary" busy={patch.isPending}>
          Save data source
        </Button>
      </form>
      <h3>By webhook</h3>
      <p>POST JSON to the screen with its token; the frames showing it get the new picture when it changed.</p>
      <pre className="code">{curlLine(s.id, '<token>')}</pre>
      {rotate.isError ? <Notice kind="error">{errorText(rotate.error)}</Notice> : null}
      {rotate.data ? <TokenOnce id={s.id} token={rotate.data} /> : null}
      <Button kind="secondary" busy={rotate.isPending} onClick={() => rotate.mutate()}>
        New token (the old one stops working)
      </Button>
    </section>
  )
}

function Remove({ screen: s }: { screen: Screen }) {
  const navigate = useNavigate()
  const [confirming, setConfirming] = useState(false)
  const remove = useMutation(screenMutations.remove(s.id))
  return (
    <section className="card" aria-labelledby="remove-title">
      <h2 id="remove-title">Delete</h2>
      {remove.isError ? <Notice kind="error">{errorText(remove.error)}</Notice> : null}
      <div className="row">
        {!confirming ? (
          <Button kind="danger" onClick={() => setConfirming(true)}>
            Delete screen…
          </Button>
        ) : (
          <>
            <span>Delete {s.name} for good? Frames showing it keep their picture.</span>
            <Button
              kind="danger"
              busy={remove.isPending}
              onClick={() =>
                // `deleted`: unsaved changes to a deleted screen are nothing to keep (useLeaveGuard).
                remove.mutate(undefined, { onSuccess: () => navigate('/screens', { replace: true, state: { deleted: true } }) })
              }
            >
              Yes, delete
            </Button>
            <Button kind="secondary" onClick={() => setConfirming(false)}>
              Keep it
            </Button>
          </>
        )}
      </div>
    </section>
  )
}
