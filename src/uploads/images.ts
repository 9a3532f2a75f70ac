// What an upload really is, from its bytes (never its name or declared type), and a clean copy:
// re-encoded by sharp, so EXIF (GPS, camera serials), XMP and comments are gone and the EXIF
// orientation is applied to the pixels instead.
import type { Metadata } from 'sharp'
import { loadSharp } from '../images/sharp.js'
import { AppError, appError } from '../errors.js'

export const acceptedContentTypes = ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/avif'] as const
export type AcceptedContentType = (typeof acceptedContentTypes)[number]

// The narrow content type lets the upload routes' responses type-check against their schema's enum.
type UploadFormat = { ext: 'png' | 'jpg' | 'webp' | 'gif' | 'avif'; contentType: AcceptedContentType }
export type CleanImage = UploadFormat & { body: Buffer; width: number; height: number }

/** 40 megapixels: a decompression bomb is refused before sharp allocates its pixels. */
const MAX_PIXELS = 40_000_000

function formatOf(meta: Metadata): UploadFormat | null {
  switch (meta.format) {
    case 'png':
      return { ext: 'png', contentType: 'image/png' }
    case 'jpeg':
      return { ext: 'jpg', contentType: 'image/jpeg' }
    case 'webp':
      return { ext: 'webp', contentType: 'image/webp' }
    case 'gif':
      return { ext: 'gif', contentType: 'image/gif' }
    case 'heif':
      // HEIF holds AVIF (AV1) and HEIC (HEVC); only AVIF is accepted.
      return meta.compression === 'av1' ? { ext: 'avif', contentType: 'image/avif' } : null
    default:
      return null
  }
}

const unsupported = () => appError('UNSUPPORTED_MEDIA_TYPE')

export async function cleanImage(input: Buffer): Promise<CleanImage> {
  if (input.length === 0) throw appError('EMPTY_FILE')
  let meta: Metadata
  try {
    // The header only (no pixels decoded), read without the limit so a too-large image is told
    // apart from one that is not an image: 413 below rather than 415.
    meta = await (await loadSharp())(input, { limitInputPixels: false }).metadata()
  } catch {
    throw unsupported()
  }
  const format = formatOf(meta)
  if (!format) throw unsupported()
  if ((meta.width ?? 0) * (meta.pageHeight ?? meta.height ?? 0) > MAX_PIXELS) {
    throw appError('IMAGE_TOO_LARGE', `Images may have at most ${MAX_PIXELS} pixels`)
  }
  const animated = (meta.pages ?? 1) > 1 && (format.ext === 'gif' || format.ext === 'webp')
  try {
    let img = (await loadSharp())(input, { limitInputPixels: MAX_PIXELS, animated })
    // Orientation 1 is upright; animations carry no EXIF orientation.
    if (!animated && meta.orientation && meta.orientation > 1) img = img.rotate()
    // sharp writes no metadata unless asked (no withMetadata/keepExif here).
    switch (format.ext) {
      case 'png':
        img = img.png()
        break
      case 'jpg':
        img = img.jpeg({ quality: 90 })
        break
      case 'webp':
        img = img.webp({ quality: 90 })
        break
      case 'gif':
        img = img.gif()
        break
      case 'avif':
        img = img.avif({ quality: 60 })
        break
    }
    const body = await img.toBuffer()
    const out = await (await loadSharp())(body).metadata()
    return { ...format, body, width: out.width ?? 0, height: out.pageHeight ?? out.height ?? 0 }
  } catch (err) {
    if (err instanceof AppError) throw err
    // Recognised by its header but not decodable: a truncated or corrupt image.
    throw appError('INVALID_IMAGE')
  }
}
