// Request and response schemas for /api/screens (TypeBox, so the service's input types are what is validated).
import { Type } from 'typebox'
import { NullableString, StringEnum } from '../http/typebox.js'
import { RENDERERS } from './render-job.js'

const headerName = "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$"

const sourceSchema = Type.Object(
  {
    url: Type.String({ minLength: 8, maxLength: 2048, description: 'an http(s) URL answering JSON (an ICS feed for a calendar screen)' }),
    everySeconds: Type.Integer({
      minimum: 1,
      maximum: 7 * 86400,
      description: 'how often it is fetched; at least SCREEN_MIN_POLL_SECONDS',
    }),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: headerName }), Type.String({ maxLength: 4096 }), {
        maxProperties: 20,
        description: 'sent with every fetch (an API key, a bearer token); stored encrypted, never shown again (only their names)',
      }),
    ),
  },
  { additionalProperties: false },
)

const fields = {
  name: Type.String({ minLength: 1, maxLength: 100 }),
  template: Type.String({ minLength: 1, maxLength: 100_000, description: 'a Liquid template producing HTML' }),
  css: Type.String({ maxLength: 200_000, description: 'a stylesheet for the HTML (class selectors and the like)' }),
  variables: Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), {
    maxProperties: 200,
    description: "values the template reads by name (the data's own fields take precedence)",
  }),
  timeZone: Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone the screen shows times in' }),
  renderer: StringEnum(RENDERERS, {
    description:
      'who draws the HTML: `takumi` (default; no browser, flexbox layout) or `chromium` (full CSS: grid, pseudo-elements, floats; only where the server has Chromium, SCREEN_RENDERER_UNAVAILABLE otherwise). The page reaches no network either way',
  }),
  allowPrivate: Type.Boolean({ description: 'admins only: the data URL may be on loopback, link-local or private addresses' }),
}

export const screenCreateSchema = Type.Object(
  {
    name: fields.name,
    template: Type.Optional(fields.template),
    builtin: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'instead of a template, a built-in screen: clock, calendar (an ICS source), frame-status, weather (an Open-Meteo JSON source)',
      }),
    ),
    css: Type.Optional(fields.css),
    variables: Type.Optional(fields.variables),
    timeZone: Type.Optional(fields.timeZone),
    renderer: Type.Optional(fields.renderer),
    source: Type.Optional(sourceSchema),
    allowPrivate: Type.Optional(fields.allowPrivate),
    organizationId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'the organization that owns it (you must be its owner or admin)' }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Weather',
        template: '<div class="big">{{ temperature }} °C</div>',
        css: '.big{font-size:96px}',
        source: { url: 'https://api.example.com/weather.json', everySeconds: 900 },
      },
    ],
  },
)

export const screenPatchSchema = Type.Object(
  {
    name: Type.Optional(fields.name),
    template: Type.Optional(fields.template),
    css: Type.Optional(fields.css),
    variables: Type.Optional(fields.variables),
    timeZone: Type.Optional(fields.timeZone),
    renderer: Type.Optional(fields.renderer),
    source: Type.Optional(Type.Union([sourceSchema, Type.Null()])),
    allowPrivate: Type.Optional(fields.allowPrivate),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ template: '<h1>{{ title }}</h1>', variables: { title: 'Hello' } }] },
)

const errorSchema = Type.Object({ code: Type.String(), message: Type.String(), at: Type.String() })

export const screenRecordSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  template: NullableString(),
  builtin: NullableString(),
  css: NullableString(),
  variables: Type.Record(Type.String(), Type.Unknown()),
  timeZone: Type.String(),
  renderer: fields.renderer,
  source: Type.Union([
    Type.Object({ url: Type.String(), everySeconds: Type.Integer(), headerNames: Type.Array(Type.String()) }),
    Type.Null(),
  ]),
  allowPrivate: Type.Boolean(),
  userId: Type.String(),
  organizationId: NullableString(),
  dataAt: NullableString({ description: 'when data last arrived (webhook or fetch)' }),
  renderedAt: NullableString(),
  lastError: Type.Union([errorSchema, Type.Null()], { description: 'why the last render or fetch failed; null once one succeeds' }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
})

export const screenCreatedSchema = Type.Object({
  ...screenRecordSchema.properties,
  token: Type.String({ description: 'the webhook token for POST /api/screens/{id}/data; shown only now' }),
})

/**
 * A draft to preview: what the editor holds, unsaved. Any field left out is the saved screen's
 * (or, previewing before creation, the default); the screen's data is always the saved data.
 */
export const screenDraftSchema = Type.Object(
  {
    template: Type.Optional(fields.template),
    builtin: Type.Optional(screenCreateSchema.properties.builtin),
    css: Type.Optional(fields.css),
    variables: Type.Optional(fields.variables),
    timeZone: Type.Optional(fields.timeZone),
    renderer: Type.Optional(fields.renderer),
    deviceId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: "drawn for this frame's size, inks and dithering (one you may read)" }),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ template: '<h1>{{ title }}</h1>', css: 'h1{font-size:64px}', variables: { title: 'Draft' } }],
  },
)

/** What the console needs to offer a renderer before it is refused: which ones this server has, and why not. */
export const screenRenderersSchema = Type.Object({
  renderers: Type.Array(
    Type.Object({
      name: fields.renderer,
      available: Type.Boolean({ description: 'whether a screen may choose it on this server now' }),
      reason: NullableString({ description: 'why it is not available (what saving or previewing with it would answer, 422)' }),
    }),
  ),
})
