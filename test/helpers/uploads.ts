// An image uploaded as a user would (POST /api/upload, multipart): a plain PNG of one colour.
import sharp from 'sharp'
import { appFetch } from './app-fetch.js'

type Colour = string | { r: number; g: number; b: number }

/** Uploads a `width`×`height` PNG of `background`; answers the upload's key. */
export async function uploadPng(baseUrl: string, token: string, background: Colour, width = 320, height = 240): Promise<string> {
  const png = await sharp({ create: { width, height, channels: 3, background } })
    .png()
    .toBuffer()
  return uploadImage(baseUrl, token, png)
}

/** Uploads an image file as it is; answers the upload's key. */
export async function uploadImage(baseUrl: string, token: string, png: Buffer): Promise<string> {
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'photo.png')
  const res = await appFetch(`${baseUrl}/api/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })
  if (res.status !== 201) throw new Error(`upload: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { key: string }).key
}
