// The display conversion (decode, resize, dither, encode) in a worker thread: dithering a large
// panel is hundreds of milliseconds of JavaScript that would otherwise stop every request. The
// same function as in-process (convertForDisplay), so the bytes are the same. Errors come back as
// data: a thrown AppError would lose its status and code crossing the thread.
import { AppError } from '../errors.js'
import { convertForDisplay, ImageInputError } from './convert.js'
import type { DisplayProfile } from './profiles.js'
import type { ConversionRequest, ConversionResult } from './conversion-pool.js'

export default async function convert({ input, profile }: ConversionRequest): Promise<ConversionResult> {
  try {
    const variants = await convertForDisplay(Buffer.from(input.buffer, input.byteOffset, input.byteLength), profile as DisplayProfile)
    return { ok: true, variants }
  } catch (err) {
    if (err instanceof AppError)
      return {
        ok: false,
        error: { statusCode: err.statusCode, code: err.code, message: err.message, input: err instanceof ImageInputError },
      }
    return { ok: false, error: { message: err instanceof Error ? err.message : String(err) } }
  }
}
