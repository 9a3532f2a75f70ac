// Imports a recipe in the project layout TRMNL's plugin tooling (usetrmnl/trmnlp) reads, or the
// same files at the top level as TRMNL's own export zip has them:
//   .trmnlp.yml        optional: custom_fields (values), variables (merged over everything)
//   src/settings.yml   strategy (polling | webhook | static), polling_url, polling_headers,
//                      refresh_interval (minutes), custom_fields (form fields and defaults), name
//   src/full.liquid    the full-screen layout: the one we render
//   src/shared.liquid  optional: prepended to every layout ({% template %} blocks live here)
// The half and quadrant layouts are for TRMNL's mashups, which a screen has no use for.
import { Liquid } from 'liquidjs'
import { parse as parseYaml } from 'yaml'
import { RecipeError } from './errors.js'
import { ROWS_NAME, scopeTemplate } from './scope.js'

export type ImportedRecipe = {
  name: string
  template: string
  variables: Record<string, unknown>
  source?: { url: string; everySeconds: number; headers?: Record<string, string> }
}

/** A project is a few small text files; anything larger is not one. */
const MAX_PROJECT_CHARS = 1_000_000
/** TRMNL's default refresh, 15 minutes, when settings.yml says none. */
const DEFAULT_REFRESH_MINUTES = 15

type Files = Record<string, string>
type Mapping = Record<string, unknown>

const isMapping = (v: unknown): v is Mapping => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Paths relative to the project root: "./src/x", "my-plugin/src/x" and a zip's top-level files alike. */
function projectFiles(files: Files): { get(name: string): string | undefined; where(name: string): string } {
  if (!isMapping(files)) throw new RecipeError('RECIPE_INVALID', 'A recipe is a map of file paths to their text')
  const normal = new Map<string, string>()
  let total = 0
  for (const [path, text] of Object.entries(files)) {
    if (typeof text !== 'string') throw new RecipeError('RECIPE_INVALID', `${path} must be text`)
    total += text.length
    normal.set(
      path
        .replace(/\\/g, '/')
        .replace(/^(\.\/)+/, '')
        .replace(/^\/+/, ''),
      text,
    )
  }
  if (total > MAX_PROJECT_CHARS) throw new RecipeError('RECIPE_INVALID', `The recipe's files are over ${MAX_PROJECT_CHARS} characters`)
  // The project root is where src/full.liquid (or a bare full.liquid) is, even inside a folder.
  const anchor = [...normal.keys()].filter((p) => /(^|\/)full\.liquid$/.test(p)).sort((a, b) => a.length - b.length)[0]
  const root = anchor ? anchor.replace(/(src\/)?full\.liquid$/, '') : ''
  const srcDir = anchor?.endsWith('src/full.liquid') ? `${root}src/` : root
  const where = (name: string) => (name.startsWith('.') ? `${root}${name}` : `${srcDir}${name}`)
  return { get: (name) => normal.get(where(name)), where: (name) => (anchor ? where(name) : name.startsWith('.') ? name : `src/${name}`) }
}

function readYaml(text: string | undefined, file: string): Mapping | undefined {
  if (text === undefined) return undefined
  let value: unknown
  try {
    value = parseYaml(text)
  } catch (err) {
    throw new RecipeError('RECIPE_INVALID', `${file} is not valid YAML: ${(err as Error).message.split('\n')[0]}`)
  }
  if (value === null || value === undefined) return {}
  if (!isMapping(value)) throw new RecipeError('RECIPE_INVALID', `${file} must be a mapping of settings`)
  return value
}

/** TRMNL's polling_headers: "authorization=bearer xyz&accept=application/json", values URI-encoded; a YAML map works too. */
function parseHeaders(value: unknown, file: string): Record<string, string> {
  if (value === undefined || value === null || value === '') return {}
  if (isMapping(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)]))
  if (typeof value !== 'string')
    throw new RecipeError('RECIPE_INVALID', `${file}: polling_headers must be text like "name=value&name2=value2"`)
  const headers: Record<string, string> = {}
  for (const pair of value.split('&')) {
    const at = pair.indexOf('=')
    if (at <= 0) continue
    const name = pair.slice(0, at).trim()
    try {
      headers[name] = decodeURIComponent(pair.slice(at + 1))
    } catch {
      headers[name] = pair.slice(at + 1)
    }
  }
  return headers
}

/** Deep merge the way trmnlp applies .trmnlp.yml's variables: mappings merge, anything else replaces. */
function deepMerge(base: Mapping, over: Mapping): Mapping {
  const out: Mapping = { ...base }
  for (const [key, value] of Object.entries(over)) {
    out[key] = isMapping(value) && isMapping(out[key]) ? deepMerge(out[key] as Mapping, value) : value
  }
  return out
}

/** Custom field values: the form's defaults, then the project's values. */
function customFieldValues(settings: Mapping, project: Mapping | undefined, file: string): Record<string, string> {
  const values: Record<string, string> = {}
  const fields = settings.custom_fields
  if (fields !== undefined && fields !== null) {
    if (!Array.isArray(fields)) throw new RecipeError('RECIPE_INVALID', `${file}: custom_fields must be a list of fields`)
    for (const field of fields) {
      if (!isMapping(field) || typeof field.keyname !== 'string') continue
      if (field.default !== undefined && field.default !== null) values[field.keyname] = String(field.default)
    }
  }
  if (isMapping(project?.custom_fields)) {
    for (const [key, value] of Object.entries(project.custom_fields))
      values[key] = value === null || value === undefined ? '' : String(value)
  }
  return values
}

const interpolator = new Liquid()

/** polling_url and headers may name custom fields ({{ api_key }}). Environment variables are not read: a server's environment is not the recipe's. */
function withCustomFields(text: string, values: Record<string, string>, file: string): string {
  try {
    return interpolator.parseAndRenderSync(text, { ...values, env: {} })
  } catch (err) {
    throw new RecipeError('RECIPE_INVALID', `${file}: ${(err as Error).message}`)
  }
}

/** TRMNL's {% template name %}…{% endtemplate %} partials, inlined where {% render "name", key: value %} uses them. */
function inlineTemplates(source: string, file: string): string {
  const partials = new Map<string, string>()
  const withoutDefinitions = source.replace(
    /\{%-?\s*template\s+["']?([\w\-/.]+)["']?\s*-?%\}([\s\S]*?)\{%-?\s*endtemplate\s*-?%\}/g,
    (_, name: string, body: string) => {
      partials.set(name, body)
      return ''
    },
  )
  if (/\{%-?\s*template\s/.test(withoutDefinitions))
    throw new RecipeError('RECIPE_INVALID', `${file}: a {% template %} block has no {% endtemplate %}`)
  if (partials.size === 0) return withoutDefinitions
  let expanded = withoutDefinitions
  // A partial may render another: a few passes, bounded against one that renders itself.
  for (let pass = 0; pass < 5; pass++) {
    const next = expanded.replace(/\{%-?\s*render\s+["']([\w\-/.]+)["']\s*(?:,([\s\S]*?))?-?%\}/g, (whole, name: string, args?: string) => {
      const body = partials.get(name)
      if (body === undefined) return whole
      const assigns = (args ?? '')
        .split(/,(?=\s*[\w-]+\s*:)/)
        .map((pair) => /^\s*([\w-]+)\s*:\s*([\s\S]+?)\s*$/.exec(pair))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => `{% assign ${m[1]} = ${m[2]} %}`)
        .join('')
      return `${assigns}${body}`
    })
    if (next === expanded) break
    expanded = next
  }
  return expanded
}

/** The user, device and plugin settings trmnlp gives every recipe under `trmnl`, with this service's values where it has them. */
function baseTrmnl(settings: Mapping, fieldValues: Record<string, string>, pollingUrl: string, headers: Record<string, string>): Mapping {
  return {
    user: {
      name: 'name',
      first_name: 'first_name',
      last_name: 'last_name',
      locale: 'en',
      time_zone: 'UTC',
      time_zone_iana: 'UTC',
      utc_offset: 0,
    },
    device: { friendly_id: 'ABC123', percent_charged: 100, wifi_strength: 100, width: 800, height: 480 },
    system: { timestamp_utc: 0 },
    plugin_settings: {
      instance_name: typeof settings.name === 'string' ? settings.name : 'Recipe',
      strategy: settings.strategy ?? 'polling',
      dark_mode: settings.dark_mode ?? 'no',
      polling_url: pollingUrl,
      // Header values are secrets; the template sees their names only.
      polling_headers: Object.keys(headers)
        .map((k) => `${k}=`)
        .join('&'),
      custom_fields_values: fieldValues,
    },
  }
}

function pollingSource(settings: Mapping, fieldValues: Record<string, string>, file: string): ImportedRecipe['source'] {
  const rawUrl = settings.polling_url
  if (typeof rawUrl !== 'string' || rawUrl.trim() === '') {
    throw new RecipeError('RECIPE_INVALID', `${file}: a polling recipe needs polling_url`)
  }
  const urls = withCustomFields(rawUrl, fieldValues, file)
    .split(/\r?\n/)
    .map((u) => u.trim())
    .filter((u) => u !== '')
  if (urls.length > 1)
    throw new RecipeError('RECIPE_UNSUPPORTED', `${file}: several polling URLs (data under IDX_0, IDX_1…) are not supported; use one`)
  const url = urls[0] ?? ''
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new RecipeError('RECIPE_INVALID', `${file}: polling_url "${url}" is not a URL`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new RecipeError('RECIPE_INVALID', `${file}: polling_url must be http or https`)
  const verb = typeof settings.polling_verb === 'string' ? settings.polling_verb.toUpperCase() : 'GET'
  if (verb !== 'GET')
    throw new RecipeError('RECIPE_UNSUPPORTED', `${file}: polling_verb ${verb} is not supported; sources are fetched with GET`)
  const headers = Object.fromEntries(
    Object.entries(parseHeaders(settings.polling_headers, file)).map(([k, v]) => [k, withCustomFields(v, fieldValues, file)]),
  )
  const minutes = Number(settings.refresh_interval ?? DEFAULT_REFRESH_MINUTES)
  const everySeconds = Math.round((Number.isFinite(minutes) && minutes > 0 ? minutes : DEFAULT_REFRESH_MINUTES) * 60)
  return { url: parsed.toString(), everySeconds, ...(Object.keys(headers).length > 0 ? { headers } : {}) }
}

export function importRecipe(files: Record<string, string>): ImportedRecipe {
  const project = projectFiles(files)
  const fullFile = project.where('full.liquid')
  const settingsFile = project.where('settings.yml')
  const full = project.get('full.liquid')
  if (full === undefined) throw new RecipeError('RECIPE_INVALID', `The recipe has no ${fullFile} (the full-screen layout)`)
  const settingsText = project.get('settings.yml')
  if (settingsText === undefined) throw new RecipeError('RECIPE_INVALID', `The recipe has no ${settingsFile}`)
  const settings = readYaml(settingsText, settingsFile)!
  const projectConfig = readYaml(project.get('.trmnlp.yml'), project.where('.trmnlp.yml'))

  const strategy = settings.strategy ?? 'polling'
  if (strategy !== 'polling' && strategy !== 'webhook' && strategy !== 'static') {
    throw new RecipeError('RECIPE_INVALID', `${settingsFile}: strategy must be polling, webhook or static, not ${JSON.stringify(strategy)}`)
  }
  const fieldValues = customFieldValues(settings, projectConfig, settingsFile)
  const source = strategy === 'polling' ? pollingSource(settings, fieldValues, settingsFile) : undefined

  let staticData: Mapping = {}
  if (strategy === 'static' && settings.static_data !== undefined) {
    try {
      const parsed = typeof settings.static_data === 'string' ? JSON.parse(settings.static_data) : settings.static_data
      staticData = Array.isArray(parsed) ? { data: parsed } : isMapping(parsed) ? parsed : {}
    } catch {
      throw new RecipeError('RECIPE_INVALID', `${settingsFile}: static_data is not valid JSON`)
    }
  }

  // Everything a TRMNL recipe reads besides the polled JSON: custom fields at the top level and
  // under trmnl.plugin_settings, static data, then the project's variables over all of it.
  const trmnl = baseTrmnl(settings, fieldValues, source?.url ?? '', source?.headers ?? {})
  let variables: Mapping = { ...fieldValues, ...staticData, trmnl }
  if (isMapping(projectConfig?.variables)) variables = deepMerge(variables, projectConfig.variables)
  // A static recipe's rows are variables: its `data` root reads them, not the (empty) screen data.
  const rowsFrom = strategy === 'static' && 'data' in variables ? 'variables.data' : 'data.data | default: data'
  const roots = new Set(Object.keys(variables))
  roots.delete('data')

  const sharedFile = project.where('shared.liquid')
  const shared = project.get('shared.liquid') ?? ''
  const body = scopeTemplate(inlineTemplates(`${shared}\n${full}`, shared ? `${sharedFile} + ${fullFile}` : fullFile), roots, fullFile)

  const noBleed = settings.no_screen_padding === 'yes' || settings.no_screen_padding === true
  const dark = settings.dark_mode === 'yes' || settings.dark_mode === true
  const screenClasses = ['screen', noBleed ? 'screen--no-bleed' : '', dark ? 'dark-mode' : ''].filter(Boolean).join(' ')
  // The markup trmnlp wraps a layout in (web/views/render_html.erb), sized to the frame.
  const template = [
    `{%- assign ${ROWS_NAME} = ${rowsFrom} -%}`,
    '<div class="environment trmnl" style="width: {{ device.width | default: 800 }}px; height: {{ device.height | default: 480 }}px">',
    `<div class="${screenClasses}" style="width: {{ device.width | default: 800 }}px; height: {{ device.height | default: 480 }}px">`,
    '<div class="view view--full">',
    body.trim(),
    '</div>',
    '</div>',
    '</div>',
  ].join('\n')

  const name = typeof settings.name === 'string' && settings.name.trim() !== '' ? settings.name.trim() : 'Imported recipe'
  return { name, template, variables, ...(source ? { source } : {}) }
}
