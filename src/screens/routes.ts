// /api/screens: dashboards drawn from a Liquid template and data (pushed by webhook or fetched
// from a URL), previewed as the frame would show them, shown on frames and followed by them.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { principalOf } from '../auth/route-auth.js'
import { exampleIds } from '../openapi/examples.js'
import { callerSecurity as security, errorResponses as errors } from '../http/route-schemas.js'
import {
  screenCreatedSchema,
  screenCreateSchema,
  screenDraftSchema,
  screenPatchSchema,
  screenRecordSchema,
  screenRenderersSchema,
} from './records.js'
import type { ScreenDraft, ScreenService } from './service.js'

const tags = ['device module']
const id = Type.String({ minLength: 1, maxLength: 128 })
const params = Type.Object({ id })
/**
 * A draft's body: its template (100 000 characters) and CSS (200 000) at up to 3 bytes each in
 * UTF-8, with room for its variables; more than that cannot be a valid draft.
 */
const DRAFT_BODY_LIMIT = 1_048_576
const draftDescription =
  "Renders the draft exactly as the saved screen would be for the frame (its size, inks and dithering; the screen's data), to look at only: nothing is stored and no frame is sent anything. What the draft leaves out is the saved screen's. A template that fails answers 422 with the reason's code; the screen's `lastError` is left as it is."
const pngResponse = { type: 'string', format: 'binary', description: 'PNG' } as const

export async function screenRoutes(fastify: FastifyInstance, opts: { screens: ScreenService; webhookBodyLimit: number }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { screens } = opts

  app.get(
    '/api/screens',
    {
      schema: {
        tags,
        summary: 'Your screens and those of your organizations',
        security,
        response: { 200: Type.Object({ screens: Type.Array(screenRecordSchema) }), ...errors(401) },
      },
    },
    async (req) => ({ screens: await screens.list(principalOf(req).userId) }),
  )

  app.post(
    '/api/screens',
    {
      schema: {
        tags,
        summary: 'Create a screen',
        description:
          'A Liquid template (HTML, with `css` for its classes), variables, and optionally a data URL polled every `everySeconds`. The answer carries the webhook `token` for `POST /api/screens/{id}/data`, shown only this once.',
        security,
        body: screenCreateSchema,
        response: { 201: screenCreatedSchema, ...errors(400, 401, 403, 422) },
      },
    },
    async (req, reply) => reply.code(201).send(await screens.create(principalOf(req).userId, req.body)),
  )

  app.post(
    '/api/screens/recipes',
    {
      schema: {
        tags,
        summary: 'Import a TRMNL recipe as a screen',
        description:
          "A project in the layout `usetrmnl/trmnlp` reads, as `files` (path to text: `src/settings.yml`, `src/full.liquid`, `src/shared.liquid`, …). Its markup becomes the template, drawn with this service's stylesheet for the TRMNL framework classes; its polling URL becomes the screen's source.",
        security,
        body: Type.Object(
          {
            files: Type.Record(Type.String({ minLength: 1, maxLength: 200 }), Type.String({ maxLength: 500_000 }), { maxProperties: 50 }),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
            organizationId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            allowPrivate: Type.Optional(Type.Boolean()),
            renderer: screenCreateSchema.properties.renderer,
          },
          {
            additionalProperties: false,
            examples: [
              {
                files: {
                  'src/settings.yml': 'name: Hello\nstrategy: static\nstatic_data: \'{"greeting": "Hello"}\'\n',
                  'src/full.liquid': '<div class="layout"><span class="value value--large">{{ greeting }}</span></div>',
                },
              },
            ],
          },
        ),
        response: { 201: screenCreatedSchema, ...errors(400, 401, 403, 422) },
      },
    },
    async (req, reply) => reply.code(201).send(await screens.importRecipe(principalOf(req).userId, req.body)),
  )

  app.get(
    '/api/screens/renderers',
    {
      schema: {
        tags,
        summary: 'The renderers a screen may choose on this server',
        description:
          '`takumi` always; `chromium` only where the server has Chromium (CHROMIUM_PATH). A screen, draft or recipe asking for one that is not available is answered 422 SCREEN_RENDERER_UNAVAILABLE with the same `reason`.',
        security,
        response: { 200: screenRenderersSchema, ...errors(401) },
      },
    },
    async () => ({ renderers: screens.renderers() }),
  )

  app.get(
    '/api/screens/:id',
    { schema: { tags, summary: 'Get a screen', security, params, response: { 200: screenRecordSchema, ...errors(401, 404) } } },
    async (req) => screens.get(principalOf(req).userId, req.params.id),
  )

  app.patch(
    '/api/screens/:id',
    {
      schema: {
        tags,
        summary: 'Change a screen',
        description: 'The frames showing it are drawn again. `source: null` removes the data URL.',
        security,
        params,
        body: screenPatchSchema,
        response: { 200: screenRecordSchema, ...errors(400, 401, 403, 404, 422) },
      },
    },
    async (req) => screens.patch(principalOf(req).userId, req.params.id, req.body),
  )

  app.delete(
    '/api/screens/:id',
    {
      schema: { tags, summary: 'Delete a screen', security, params, response: { 204: Type.Null(), ...errors(401, 403, 404, 409) } },
    },
    async (req, reply) => {
      await screens.remove(principalOf(req).userId, req.params.id)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/api/screens/:id/token',
    {
      schema: {
        tags,
        summary: 'A new webhook token (the old one stops working)',
        security,
        params,
        response: { 200: Type.Object({ token: Type.String() }), ...errors(401, 403, 404) },
      },
    },
    async (req) => screens.rotateToken(principalOf(req).userId, req.params.id),
  )

  // Static types rather than the type provider's: the answer is raw PNG bytes.
  fastify.get<{ Params: { id: string }; Querystring: { deviceId?: string } }>(
    '/api/screens/:id/preview',
    {
      schema: {
        tags,
        summary: 'The picture a frame would show',
        description:
          "Drawn now at the frame's size, converted to its panel's inks with its dithering (without `deviceId`: a black-and-white 800×480 panel). A template that fails answers 422 with the reason's code, which the screen's `lastError` also records.",
        security,
        params,
        querystring: Type.Object({ deviceId: Type.Optional(id) }),
        response: { 200: pngResponse, ...errors(401, 404, 422, 503) },
      },
    },
    async (req, reply) => {
      const { body, contentType } = await screens.preview(principalOf(req).userId, req.params.id, req.query.deviceId)
      return reply.type(contentType).header('cache-control', 'no-store').send(body)
    },
  )

  // Static types, as the GET preview: the answer is raw PNG bytes.
  fastify.post<{ Params: { id: string }; Body: ScreenDraft }>(
    '/api/screens/:id/preview',
    {
      bodyLimit: DRAFT_BODY_LIMIT,
      schema: {
        tags,
        summary: 'The picture a frame would show with an unsaved draft',
        description: draftDescription,
        security,
        params,
        body: screenDraftSchema,
        response: { 200: pngResponse, ...errors(400, 401, 404, 413, 422, 503) },
      },
    },
    async (req, reply) => {
      const { body, contentType } = await screens.previewDraft(principalOf(req).userId, req.params.id, req.body)
      return reply.type(contentType).header('cache-control', 'no-store').send(body)
    },
  )

  fastify.post<{ Body: ScreenDraft }>(
    '/api/screens/preview',
    {
      bodyLimit: DRAFT_BODY_LIMIT,
      schema: {
        tags,
        summary: 'The picture a frame would show for a screen not created yet',
        description: `${draftDescription} Without a saved screen the draft has no data, and gives \`template\` or \`builtin\` itself.`,
        security,
        body: screenDraftSchema,
        response: { 200: pngResponse, ...errors(400, 401, 404, 413, 422, 503) },
      },
    },
    async (req, reply) => {
      const { body, contentType } = await screens.previewDraft(principalOf(req).userId, undefined, req.body)
      return reply.type(contentType).header('cache-control', 'no-store').send(body)
    },
  )

  app.post(
    '/api/screens/:id/show',
    {
      schema: {
        tags,
        summary: 'Show the screen on a frame now',
        description: 'The frame then follows the screen: when its data changes, the frame gets the new picture.',
        security,
        params,
        body: Type.Object({ deviceId: id }, { additionalProperties: false, examples: [{ deviceId: exampleIds.deviceId }] }),
        response: {
          200: Type.Object({ deviceId: Type.String(), imageId: Type.String(), sha256: Type.String() }),
          ...errors(400, 401, 403, 404, 422, 503),
        },
      },
    },
    async (req) => screens.show(principalOf(req).userId, req.params.id, req.body.deviceId),
  )

  app.post(
    '/api/screens/:id/data',
    {
      // The screen's own webhook token, checked by the service (a session is not what a data feed has).
      config: { auth: 'none' },
      bodyLimit: opts.webhookBodyLimit,
      schema: {
        tags,
        summary: "Push the screen's data (webhook)",
        description:
          "`Authorization: Bearer <the screen's token>`. The JSON body becomes the template's `data` (an object's fields are also read by name); the frames showing the screen get the new picture when it changed.",
        params,
        body: Type.Unknown({ description: 'any JSON', examples: [{ temperature: 21, summary: 'Sunny' }] }),
        response: {
          200: Type.Object({
            frames: Type.Integer({ description: 'frames showing the screen' }),
            sent: Type.Integer({ description: 'frames sent a new picture' }),
            lastError: Type.Union([Type.Object({ code: Type.String(), message: Type.String(), at: Type.String() }), Type.Null()]),
          }),
          ...errors(400, 401, 413),
        },
      },
    },
    async (req) => screens.pushData(req.params.id, req.headers.authorization, req.body),
  )
}
