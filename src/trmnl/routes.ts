// TRMNL's device protocol, as its open firmware speaks it (usetrmnl/trmnl-firmware): GET
// /api/setup, GET /api/display, POST /api/log, and the files their answers point at. The device
// authenticates with the headers ID (its MAC) and Access-Token (the api_key /api/setup gave it).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { type DeviceLogService, LOG_BATCH_MAX_BYTES, LOG_BATCH_MAX_ENTRIES } from '../device-logs/service.js'
import { appError } from '../errors.js'
import { errorResponses as errors } from '../http/route-schemas.js'
import { SCREEN_FORMATS, type ScreenFormat } from './screens.js'
import { MIN_REFRESH_SECONDS, SPECIAL_FUNCTION } from './display-rules.js'
import { MAC, type TrmnlHeaders, type TrmnlService } from './service.js'

const tags = ['TRMNL devices']
/** The firmware's levels, as the device log store has them (a Map: the level is the device's word, `__proto__` included). */
const LEVELS = new Map<string, 'debug' | 'info' | 'warn' | 'error'>([
  ['debug', 'debug'],
  ['verbose', 'debug'],
  ['info', 'info'],
  ['warn', 'warn'],
  ['warning', 'warn'],
  ['error', 'error'],
  ['fatal', 'error'],
])
/** Setups per address per minute: each one creates a pending pairing. */
const SETUP_RATE_LIMIT = { max: 10, timeWindow: 60_000 }

const deviceHeaders = Type.Object(
  {
    id: Type.Optional(Type.String({ maxLength: 64, description: 'the MAC address' })),
    'access-token': Type.Optional(Type.String({ maxLength: 128 })),
    'fw-version': Type.Optional(Type.String({ maxLength: 50 })),
    model: Type.Optional(Type.String({ maxLength: 64 })),
    width: Type.Optional(Type.String({ maxLength: 6 })),
    height: Type.Optional(Type.String({ maxLength: 6 })),
    'refresh-rate': Type.Optional(Type.String({ maxLength: 10 })),
    'battery-voltage': Type.Optional(Type.String({ maxLength: 10 })),
    'percent-charged': Type.Optional(Type.String({ maxLength: 10 })),
    rssi: Type.Optional(Type.String({ maxLength: 10 })),
    'x-public-key': Type.Optional(Type.String({ maxLength: 64 })),
    'x-signature': Type.Optional(Type.String({ maxLength: 128 })),
    'x-timestamp': Type.Optional(Type.String({ maxLength: 16 })),
    special_function: Type.Optional(Type.String({ maxLength: 10, description: '"true" when the frame\'s button was double-pressed' })),
  },
  { additionalProperties: true },
)

const nullableString = Type.Union([Type.String(), Type.Null()])
const displayAnswer = Type.Object({
  status: Type.Integer({ description: '0, or 202 while nobody has claimed the device' }),
  image_url: nullableString,
  filename: nullableString,
  refresh_rate: Type.Integer(),
  playlist: Type.Optional(
    Type.Array(Type.String(), {
      description:
        'The file names of the rotation playing now, the one shown first: the firmware keeps these in its image cache and drops the rest',
    }),
  ),
  update_firmware: Type.Boolean(),
  firmware_url: nullableString,
  reset_firmware: Type.Boolean(),
  special_function: Type.String({ description: "what a double press of the frame's button does (the firmware stores it at every answer)" }),
  image_url_timeout: Type.Integer({ description: 'seconds the firmware waits for image_url' }),
  action: Type.Optional(Type.String({ description: 'the special function run, answering a double press' })),
  friendly_id: Type.Optional(Type.String()),
})

function number(v: string | string[] | undefined, min: number, max: number): number | undefined {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
  return Number.isFinite(n) && n >= min && n <= max ? n : undefined
}

function headersOf(req: FastifyRequest): TrmnlHeaders {
  const h = req.headers
  const str = (v: string | string[] | undefined) => (typeof v === 'string' && v.length ? v : undefined)
  return {
    id: str(h.id),
    accessToken: str(h['access-token']),
    fwVersion: str(h['fw-version']),
    model: str(h.model),
    width: number(h.width, 1, 10_000),
    height: number(h.height, 1, 10_000),
    refreshRate: number(h['refresh-rate'], 1, 7 * 86_400),
    batteryVoltage: number(h['battery-voltage'], 0, 10),
    percentCharged: number(h['percent-charged'], 0, 100),
    rssi: number(h.rssi, -200, 0),
    publicKey: str(h['x-public-key']),
    signature: str(h['x-signature']),
    timestamp: number(h['x-timestamp'], 0, Number.MAX_SAFE_INTEGER),
    specialFunction: h.special_function === 'true',
  }
}

/** The routes whose answers the firmware reads: every error from them is also a display answer. */
const FIRMWARE_ROUTES = new Set(['/api/setup', '/api/display', '/api/log'])

/**
 * An error body the firmware handles safely, still `{message, code}` for every other client: the
 * firmware parses the body of a 200, 301 or 429 to /api/display as a display answer
 * (src/api-client/display.cpp; lib/trmnl/src/parse_response_api_display.cpp), where a missing
 * refresh_rate reads as 0 (it wakes again at once) and a `status` of 500 as "reset" (it forgets
 * its Wi-Fi). So: status 0, no image, no reset, and a refresh_rate of at least a minute, the
 * limit's own wait for a 429.
 */
function firmwareSafeError(error: { message?: unknown; code?: unknown }, statusCode: number, retryAfter?: number) {
  const wait = statusCode === 429 && retryAfter && Number.isFinite(retryAfter) ? Math.ceil(retryAfter) : 300
  return {
    message: typeof error.message === 'string' ? error.message : 'Error',
    code: typeof error.code === 'string' ? error.code : 'INTERNAL_ERROR',
    status: 0,
    image_url: null,
    filename: null,
    refresh_rate: Math.max(MIN_REFRESH_SECONDS, Math.min(wait, 86_400)),
    update_firmware: false,
    firmware_url: null,
    reset_firmware: false,
    special_function: SPECIAL_FUNCTION,
    image_url_timeout: 30,
  }
}

export async function trmnlRoutes(app: FastifyInstance, opts: { trmnl: TrmnlService; logs: DeviceLogService }) {
  const { trmnl, logs } = opts

  // Every error these routes answer (the rate limit's too, and a 5xx) is a display answer as well.
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode < 400 || !FIRMWARE_ROUTES.has(req.routeOptions.url ?? '') || typeof payload !== 'string') return payload
    let body: unknown
    try {
      body = JSON.parse(payload)
    } catch {
      return payload
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return payload
    const retryAfter = Number(reply.getHeader('retry-after'))
    reply.header('content-type', 'application/json; charset=utf-8')
    return JSON.stringify(firmwareSafeError(body as Record<string, unknown>, reply.statusCode, retryAfter))
  })

  async function device(req: FastifyRequest) {
    const h = headersOf(req)
    const row = await trmnl.authenticate(h)
    if (!row) throw appError('UNAUTHORIZED', 'Unknown device: the ID and Access-Token headers do not match a device; call /api/setup')
    const refused = await trmnl.checkIdentity(row, h)
    if (refused) throw appError('UNAUTHORIZED', refused)
    return row
  }

  app.get(
    '/api/setup',
    {
      config: { auth: 'none', rateLimit: SETUP_RATE_LIMIT },
      schema: {
        tags,
        summary: 'A TRMNL device asks to pair',
        description:
          'Headers `ID` (MAC), `FW-Version`, `Model`. Every call starts a new pending pairing with a new `api_key` (a MAC is printed on the box: it proves nothing). `friendly_id` is the code the owner types to claim it (POST /api/device/validate).',
        headers: deviceHeaders,
        response: {
          200: Type.Object({
            status: Type.Integer(),
            auth_mode: Type.Literal('ed25519', { description: 'firmware with a device identity signs its requests from now on' }),
            api_key: Type.String(),
            friendly_id: Type.String(),
            image_url: Type.String(),
            filename: Type.String(),
          }),
          ...errors(400, 429),
        },
      },
    },
    async (req) => {
      const h = headersOf(req)
      if (!h.id || !MAC.test(h.id)) throw appError('VALIDATION_ERROR', 'The ID header must be the device’s MAC address (AA:BB:CC:DD:EE:FF)')
      return trmnl.setup(h)
    },
  )

  app.get(
    '/api/time',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'The service’s time, which a TRMNL device signs its requests with',
        response: { 200: Type.Object({ timestamp_ms: Type.Integer() }) },
      },
    },
    async () => ({ timestamp_ms: Date.now() }),
  )

  app.get(
    '/api/display',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'A TRMNL device asks what to show',
        description:
          'Headers `ID`, `Access-Token`, and its report: `Battery-Voltage`, `FW-Version`, `RSSI`, `Refresh-Rate`, `Width`, `Height`, `Model`. `filename` changes only when the image does.',
        headers: deviceHeaders,
        response: { 200: displayAnswer, ...errors(401) },
      },
    },
    async (req) => trmnl.display(await device(req), headersOf(req)),
  )

  app.post(
    '/api/log',
    {
      config: { auth: 'none' },
      bodyLimit: 256 * 1024,
      schema: {
        tags,
        summary: 'A TRMNL device sends its log',
        description: '`{logs: [{id, message, created_at (epoch seconds), level, …}]}`, kept with the device’s logs under their limits.',
        headers: deviceHeaders,
        body: Type.Object(
          { logs: Type.Array(Type.Unknown()) },
          {
            additionalProperties: true,
            examples: [
              { logs: [{ id: 17, message: 'Wi-Fi connection took 4.2 s', created_at: 1748763000, level: 'info', battery_voltage: 4.02 }] },
            ],
          },
        ),
        response: { 204: Type.Null(), ...errors(400, 401, 413) },
      },
    },
    async (req, reply) => {
      const row = await device(req)
      // Before the claim there is no device to keep logs for: accepted (the firmware resends what is refused) and dropped.
      if (!(await trmnl.claimed(row.deviceId))) return reply.code(204).send(null)
      const body = req.body as { logs: unknown[] }
      // What fits is kept: the firmware resends a refused batch at every wake.
      const entries = body.logs.slice(0, LOG_BATCH_MAX_ENTRIES).map((raw) => {
        const e = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>
        const created = typeof e.created_at === 'number' ? (e.created_at < 1e12 ? e.created_at * 1000 : e.created_at) : e.created_at
        const level = typeof e.level === 'string' ? e.level.toLowerCase() : 'info'
        const { message, created_at: _c, level: _l, ...fields } = e
        return { at: created, level: LEVELS.get(level) ?? 'info', message, fields }
      })
      const bytes = Buffer.byteLength(JSON.stringify(entries))
      const { refused } = await logs.ingest(row.deviceId, entries, bytes)
      if (refused === 'too-large') throw appError('PAYLOAD_TOO_LARGE', `At most ${LOG_BATCH_MAX_BYTES / 1024} KiB a batch`)
      return reply.code(204).send(null)
    },
  )

  const signed = Type.Object({ exp: Type.Optional(Type.String({ maxLength: 12 })), sig: Type.Optional(Type.String({ maxLength: 64 })) })

  /** A signed link, or the device's own headers (then only for what is its own: `owns`). */
  async function allowed(req: FastifyRequest, path: string, owns: (deviceId: string) => Promise<boolean>): Promise<void> {
    const q = req.query as { exp?: string; sig?: string }
    if (q.sig && q.exp && trmnl.checkSignature(path, Number(q.exp), q.sig)) return
    const row = await trmnl.authenticate(headersOf(req))
    if (!row || !(await owns(row.deviceId)))
      throw appError('UNAUTHORIZED', 'A signed link or the device’s ID and Access-Token headers are needed')
  }

  const send = (reply: FastifyReply, body: Buffer, type: string) =>
    reply.type(type).header('content-length', body.length).header('cache-control', 'private, max-age=3600').send(body)

  app.get(
    '/api/trmnl/images/:deviceId/:id/:format',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'An image as the device shows it (the exact bytes its firmware checks)',
        description: 'Fetching it (GET, not HEAD) marks the device as showing it.',
        params: Type.Object({
          deviceId: Type.String({ format: 'uuid' }),
          id: Type.String({ format: 'uuid' }),
          format: Type.String({ pattern: '^[a-z0-9-]{1,20}$' }),
        }),
        querystring: signed,
        response: { 200: { type: 'string', format: 'binary' }, ...errors(400, 401, 404) },
      },
    },
    async (req, reply) => {
      const { deviceId, id, format } = req.params as { deviceId: string; id: string; format: string }
      await allowed(
        req,
        `/api/trmnl/images/${deviceId}/${id}/${format}`,
        async (own) => own === deviceId && (await trmnl.desiredImage(own)) === id,
      )
      const file = await trmnl.imageFile(deviceId, id, format, req.method === 'GET')
      if (!file) throw appError('IMAGE_NOT_FOUND')
      return send(reply, file.body, file.contentType)
    },
  )

  app.get(
    '/api/trmnl/screens/:kind/:deviceId',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'A screen drawn for the device: its pairing code and QR link, "paired", or its name (identify)',
        params: Type.Object({
          kind: Type.Union([Type.Literal('setup'), Type.Literal('paired'), Type.Literal('identify')]),
          deviceId: Type.String({ format: 'uuid' }),
        }),
        querystring: Type.Object({
          ...signed.properties,
          format: Type.Optional(
            Type.Union(
              SCREEN_FORMATS.map((f) => Type.Literal(f)),
              { description: 'bmp1 (firmware before 1.5.2, the default), png1 or png2 (greyscale PNG of 1 or 2 bits)' },
            ),
          ),
        }),
        response: { 200: { type: 'string', format: 'binary' }, ...errors(400, 401, 404) },
      },
    },
    async (req, reply) => {
      const { kind, deviceId } = req.params as { kind: 'setup' | 'paired' | 'identify'; deviceId: string }
      const format = (req.query as { format?: ScreenFormat }).format
      // The format is part of what a link signs.
      const path = `/api/trmnl/screens/${kind}/${deviceId}${format ? `?format=${format}` : ''}`
      await allowed(req, path, async (own) => own === deviceId)
      const file = await trmnl.screen(kind, deviceId, format)
      if (!file) throw appError('DEVICE_NOT_FOUND')
      return send(reply, file.body, file.contentType)
    },
  )
}
