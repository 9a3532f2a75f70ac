// GET /api/demo: the whole pipeline with the local provider, no account and no key: draw an
// image from a prompt, store it, convert it for a display, and return the URLs with timings.
// The image id is derived from the prompt and profile, so repeating a demo reuses its files.
import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import type { Database } from '../db/client.js'
import { storeImage } from '../images/pipeline.js'
import type { ConversionPool } from '../images/conversion-pool.js'
import { findImage, findVariants } from '../images/repository.js'
import type { DisplayProfile } from '../images/profiles.js'
import type { ObjectStore } from '../storage/store.js'
import { toResult } from './records.js'
import { renderLocalImage } from './local-image/render.js'
import { seedFor } from './providers/local.js'

const SAMPLE = 'a lighthouse on a rocky coast at dusk'
/**
 * Open to anyone, and each new prompt stores an image set: a tighter limit per client address
 * than the API's general one keeps it a demo rather than free storage.
 */
const DEMO_RATE_LIMIT = { max: 20, timeWindow: 60_000 }
const profiles: Record<string, DisplayProfile> = {
  bw: { width: 800, height: 480, palette: 'bw' },
  gray4: { width: 800, height: 480, palette: 'gray4' },
  spectra6: { width: 800, height: 480, palette: 'spectra6' },
  acep7: { width: 800, height: 480, palette: 'acep7' },
  color: { width: 1024, height: 600, palette: 'color' },
}

/**
 * Bumped when the local model draws differently, so a demo stored by an older version is drawn
 * anew instead of being served from its files.
 */
const DRAWING_VERSION = 2

function demoId(prompt: string, palette: string): string {
  const h = createHash('sha256').update(`demo\n${DRAWING_VERSION}\n${palette}\n${prompt}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`
}

const demoQuery = Type.Object(
  {
    prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    palette: Type.Optional(Type.String({ enum: Object.keys(profiles), default: 'bw' })),
  },
  { additionalProperties: false },
)

export async function demoRoutes(
  app: FastifyInstance,
  opts: { db: Database; storage: ObjectStore; images: ConversionPool; baseUrl: string },
) {
  app.get<{ Querystring: Static<typeof demoQuery> }>(
    '/api/demo',
    {
      config: { auth: 'none', rateLimit: DEMO_RATE_LIMIT },
      schema: {
        tags: ['admin API'],
        summary: 'Demo API endpoint',
        description: 'A sample generation end to end with the local provider: no account, no key.',
        querystring: demoQuery,
        response: {
          200: {
            type: 'object',
            required: ['prompt', 'model', 'profile', 'result', 'steps'],
            properties: {
              prompt: { type: 'string' },
              model: { type: 'string' },
              profile: { $ref: 'DisplayProfile#' },
              result: { $ref: 'ImageGenerationResult#' },
              cached: { type: 'boolean' },
              steps: { type: 'array', items: { type: 'object', properties: { step: { type: 'string' }, ms: { type: 'number' } } } },
            },
          },
          400: { $ref: 'Error#' },
          429: { $ref: 'Error#' },
        },
      },
    },
    async (req) => {
      const prompt = req.query.prompt ?? SAMPLE
      const palette = req.query.palette ?? 'bw'
      const profile = profiles[palette] as DisplayProfile
      const id = demoId(prompt, palette)
      const existing = await findImage(opts.db, id)
      if (existing) {
        return {
          prompt,
          model: 'local',
          profile,
          cached: true,
          result: toResult(opts.baseUrl, existing, await findVariants(opts.db, id)),
          steps: [],
        }
      }
      const t0 = performance.now()
      // Drawn at the display's own size: a square picture cropped to the display would lose the caption.
      // Seeded as POST /api/generate seeds a prompt without a negative prompt: the same picture.
      const original = await renderLocalImage({ prompt, width: profile.width, height: profile.height, seed: seedFor(`${prompt}\n`) })
      const t1 = performance.now()
      const stored = await storeImage(
        { db: opts.db, storage: opts.storage, images: opts.images },
        { userId: 'demo', source: 'demo', original, profile, imageId: id },
      ).catch(async (err) => {
        // Two first requests for the same demo raced: the other one stored it.
        const again = await findImage(opts.db, id)
        if (!again) throw err
        return { image: again, variants: await findVariants(opts.db, id) }
      })
      const t2 = performance.now()
      return {
        prompt,
        model: 'local',
        profile,
        cached: false,
        result: toResult(opts.baseUrl, stored.image, stored.variants),
        steps: [
          { step: 'generate (local provider)', ms: Math.round(t1 - t0) },
          { step: 'store original, convert for the display, store variants', ms: Math.round(t2 - t1) },
        ],
      }
    },
  )
}
