// TRMNL recipes in trmnlp's project layout import as screens: the full layout wrapped in the
// framework's screen/view markup, free names read from `data` (the polled JSON) or `variables`
// (trmnl.*, custom fields), the source from settings.yml; broken projects fail with a code.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import juice from 'juice'
import { Liquid } from 'liquidjs'
import t from 'tap'
import { importRecipe, trmnlFrameworkCss } from '../../src/screens/recipes/index.js'
import { visibleText } from '../helpers/screen-render.js'

const EXAMPLES = new URL('../../src/screens/recipes/examples/', import.meta.url).pathname
const liquid = new Liquid()

function readProject(dir: string): Record<string, string> {
  const files: Record<string, string> = {}
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name)
      if (statSync(path).isDirectory()) walk(path)
      else files[relative(dir, path)] = readFileSync(path, 'utf8')
    }
  }
  walk(dir)
  return files
}

const device = { id: 'd1', name: 'Hall', width: 800, height: 480 }
const render = (template: string, data: unknown, variables: Record<string, unknown>, dev: object | undefined = device) =>
  liquid.parseAndRenderSync(template, { data, variables, device: dev })

const hnProject = {
  '.trmnlp.yml': '---\nwatch:\n  - src\n',
  'src/settings.yml':
    "---\nstrategy: polling\nname: Hacker News Top Stories\npolling_verb: get\npolling_url: https://hn.example.com/top.json\npolling_headers: ''\nrefresh_interval: 15\n",
  'src/full.liquid': `<div class="layout"><div class="grid grid--cols-1 gap--small">
{% for story in stories %}<div class="item"><div class="meta"><span class="index">{{ story.rank }}</span></div>
<div class="content"><span class="title title--small">{{ story.title }}</span><span class="description">{{ story.by }}</span></div></div>{% endfor %}
</div></div>
<div class="title_bar"><span class="title">Hacker News</span><span class="instance">Top {{ fetched_count }} stories for {{ trmnl.user.first_name }}</span></div>`,
  'src/half_horizontal.liquid': '<div class="layout">{{ stories.size }}</div>',
}

t.test('a polling project: the full layout, wrapped and scoped; its source from settings.yml', async (t) => {
  const recipe = importRecipe(hnProject)
  t.equal(recipe.name, 'Hacker News Top Stories')
  t.same(recipe.source, { url: 'https://hn.example.com/top.json', everySeconds: 900 })
  t.match(recipe.template, /<div class="screen"[^>]*>\s*<div class="view view--full">/)
  const html = render(recipe.template, { stories: [{ rank: 1, title: 'Show HN: a frame', by: 'pg' }], fetched_count: 1 }, recipe.variables)
  const text = visibleText(html)
  t.match(text, '1 Show HN: a frame pg')
  t.match(text, 'Top 1 stories for first_name')
  t.match(html, 'style="width: 800px; height: 480px"')
  t.notMatch(html, /view--half/, 'only the full layout')
})

t.test('the example transit board: custom fields in the URL and headers, shared {% template %} partials, trmnl settings', async (t) => {
  const recipe = importRecipe(readProject(join(EXAMPLES, 'transit-board')))
  t.equal(recipe.name, 'Transit Board')
  t.same(recipe.source, {
    url: 'https://transit.example.com/v1/stops/900100003/departures?limit=6',
    everySeconds: 300,
    headers: { authorization: 'Bearer demo-key', accept: 'application/json' },
  })
  t.same((recipe.variables.trmnl as any).plugin_settings.custom_fields_values, {
    stop_id: '900100003',
    walk_minutes: '4',
    api_key: 'demo-key',
  })
  t.equal((recipe.variables.trmnl as any).user.time_zone_iana, 'Europe/Berlin', ".trmnlp.yml's variables are merged over the defaults")
  const departures = [
    { line: 'U2', destination: 'Pankow', minutes: 0, platform: 1 },
    { line: 'S5', destination: 'Spandau', minutes: 3 },
    { line: 'M1', destination: 'Mitte', minutes: 7 },
    { line: 'U8', destination: 'Wittenau', minutes: 9 },
  ]
  const html = render(recipe.template, { stop: { name: 'Alexanderplatz' }, departures, updated_at: '10:42' }, recipe.variables)
  const text = visibleText(html)
  t.match(text, 'U2 to Pankow now · platform 1')
  t.match(text, 'S5 to Spandau in 3 min')
  t.match(text, 'U8 to Wittenau in 9 min', 'the second column')
  t.match(text, 'Leave 4 min before departure')
  t.match(text, 'Alexanderplatz 4 departures · updated 10:42')
  t.notMatch(html, /template|render/, 'the partials are inlined')
})

t.test('the example daily quote: static data and the frame size from the device', async (t) => {
  const recipe = importRecipe(readProject(join(EXAMPLES, 'daily-quote')))
  t.equal(recipe.name, 'Daily Quote')
  t.equal(recipe.source, undefined)
  const html = render(recipe.template, {}, recipe.variables, { ...device, width: 1872, height: 1404 })
  const text = visibleText(html)
  t.match(text, '“Simplicity is prerequisite for reliability.” Edsger W. Dijkstra')
  t.match(text, '— the kitchen frame')
  t.match(text, 'Daily Quote 1872 × 1404')
})

t.test('an answer that is a JSON array is `data`, as trmnlp wraps it; names of polled keys never clash with ours', async (t) => {
  const recipe = importRecipe({
    'settings.yml': 'strategy: webhook\nname: Rows\n',
    'full.liquid': '{% for row in data %}<span>{{ row.n }}</span>{% endfor %} {{ device }} {{ variables }} {{ ["odd key"] }}',
  })
  t.equal(recipe.source, undefined, 'a webhook recipe has no URL source')
  t.equal(visibleText(render(recipe.template, [{ n: 1 }, { n: 2 }], recipe.variables)), '1 2')
  const html = render(
    recipe.template,
    { data: [{ n: 3 }], device: 'polled-device', variables: 'polled-vars', 'odd key': 'odd' },
    recipe.variables,
  )
  t.equal(visibleText(html), '3 polled-device polled-vars odd')
})

t.test('assigned and loop names stay local; an unknown strategy, broken YAML or Liquid are refused naming the file', async (t) => {
  const recipe = importRecipe({
    'my-plugin/src/settings.yml': 'strategy: webhook',
    'my-plugin/src/full.liquid':
      '{% assign x = items | size %}{% capture y %}{{ x }}!{% endcapture %}{% for i in items %}{{ forloop.index }}{{ i }}{% endfor %}{{ y }}',
  })
  t.equal(visibleText(render(recipe.template, { items: ['a', 'b'] }, recipe.variables)), '1a2b2!')

  const bad: [string, Record<string, string>, string, RegExp][] = [
    ['no full layout', { 'src/settings.yml': 'strategy: webhook' }, 'RECIPE_INVALID', /src\/full\.liquid/],
    ['no settings', { 'src/full.liquid': '<div></div>' }, 'RECIPE_INVALID', /src\/settings\.yml/],
    [
      'broken YAML',
      { 'src/full.liquid': 'x', 'src/settings.yml': 'strategy: [polling' },
      'RECIPE_INVALID',
      /src\/settings\.yml is not valid YAML/,
    ],
    [
      'settings not a map',
      { 'src/full.liquid': 'x', 'src/settings.yml': '- a\n- b' },
      'RECIPE_INVALID',
      /src\/settings\.yml must be a mapping/,
    ],
    ['unknown strategy', { 'src/full.liquid': 'x', 'src/settings.yml': 'strategy: carrier-pigeon' }, 'RECIPE_INVALID', /strategy must be/],
    ['polling without a URL', { 'src/full.liquid': 'x', 'src/settings.yml': 'strategy: polling' }, 'RECIPE_INVALID', /needs polling_url/],
    ['a URL that is not one', { 'src/full.liquid': 'x', 'src/settings.yml': 'polling_url: not a url' }, 'RECIPE_INVALID', /is not a URL/],
    ['file URL', { 'src/full.liquid': 'x', 'src/settings.yml': 'polling_url: file:///etc/passwd' }, 'RECIPE_INVALID', /http or https/],
    [
      'several URLs',
      { 'src/full.liquid': 'x', 'src/settings.yml': 'polling_url: "https://a.example/1\\nhttps://a.example/2"' },
      'RECIPE_UNSUPPORTED',
      /several polling URLs/,
    ],
    [
      'POST',
      { 'src/full.liquid': 'x', 'src/settings.yml': 'polling_url: https://a.example\npolling_verb: post' },
      'RECIPE_UNSUPPORTED',
      /POST/,
    ],
    [
      'broken Liquid',
      { 'src/full.liquid': '{% for x in y %}never closed', 'src/settings.yml': 'strategy: webhook' },
      'RECIPE_INVALID',
      /src\/full\.liquid is not a valid Liquid/,
    ],
    [
      'unclosed template',
      { 'src/full.liquid': 'x', 'src/shared.liquid': '{% template a %}oops', 'src/settings.yml': 'strategy: webhook' },
      'RECIPE_INVALID',
      /endtemplate/,
    ],
    ['not text', { 'src/full.liquid': 42 as unknown as string, 'src/settings.yml': 'strategy: webhook' }, 'RECIPE_INVALID', /must be text/],
    ['too large', { 'src/full.liquid': 'x'.repeat(1_000_001), 'src/settings.yml': 'strategy: webhook' }, 'RECIPE_INVALID', /over/],
  ]
  for (const [what, files, code, message] of bad) t.throws(() => importRecipe(files), { code, message }, what)
})

t.test('the framework stylesheet: class selectors only, flexbox only, the classes recipes use', async (t) => {
  const rules = trmnlFrameworkCss.split('\n').filter((l) => l.trim() !== '')
  for (const line of rules) t.match(line, /^\.[a-z][\w-]* \{ [^{}]* \}$/, line)
  t.notMatch(trmnlFrameworkCss, /display: (grid|table|block|inline)/)
  t.notMatch(trmnlFrameworkCss, /float|@import|url\(|\brem\b|\bem\b/)
  for (const name of [
    'screen',
    'view--full',
    'layout',
    'columns',
    'column',
    'grid',
    'title_bar',
    'title',
    'item',
    'meta',
    'content',
    'label',
    'value',
    'value--xsmall',
    'value--xxlarge',
    'description',
    'text--center',
    'gap--small',
    'flex--center',
    'bg--black',
    'bg--gray-50',
    'table',
  ]) {
    t.match(trmnlFrameworkCss, new RegExp(`^\\.${name} \\{`, 'm'), name)
  }
})

t.test('the stylesheet inlines into an imported recipe the way the renderer receives it (juice)', async (t) => {
  const recipe = importRecipe(hnProject)
  const html = render(recipe.template, { stories: [{ rank: 1, title: 'A', by: 'b' }], fetched_count: 1 }, recipe.variables)
  const inlined = juice.inlineContent(html, trmnlFrameworkCss)
  t.match(inlined, /class="title_bar" style="[^"]*display: flex; flex-direction: row;[^"]*background-color: #000000/)
  t.match(inlined, /class="view view--full" style="[^"]*width: 100%/)
})
