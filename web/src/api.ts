// The service's own API through the typed client generated from its OpenAPI document
// (clients/api-types.ts). Same origin, so the session cookie goes with every request.
import createClient from 'openapi-fetch'
import type { components, paths } from '../../clients/api-types'

export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' })

export type Device = components['schemas']['DeviceDetail']

export type Job = components['schemas']['ImageGenerationResponse']

/** The JSON body an endpoint takes, as its OpenAPI document says. */
export type JsonBody<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } }
}
  ? B
  : never

/** An API refusal with the service's own words ({message, code}). */
class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message)
  }
}

/** The data of an openapi-fetch result, or an ApiError with the service's message. */
export function data<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    const body = (result.error ?? {}) as { message?: unknown; code?: unknown }
    const message = typeof body.message === 'string' ? body.message : `The service answered ${result.response.status}`
    throw new ApiError(message, typeof body.code === 'string' ? body.code : 'HTTP_ERROR', result.response.status)
  }
  return result.data
}

/** Words for any error a screen shows. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message
  if (err instanceof TypeError) return 'The service cannot be reached. Check your connection and try again.'
  return err instanceof Error ? err.message : 'Something went wrong.'
}

/** Uploads a photo (POST /api/upload, multipart); answers its key. */
export async function uploadPhoto(file: File): Promise<string> {
  const form = new FormData()
  form.append('file', file)
  const up = await fetch('/api/upload', { method: 'POST', body: form, credentials: 'same-origin' })
  // A proxy in front may answer with a page, not JSON: its status is what can be said then.
  const body = (await up.json().catch(() => ({}))) as { key?: string; message?: string }
  if (!up.ok || !body.key) throw new Error(body.message ?? `The upload failed (${up.status})`)
  return body.key
}

export type Playlist = components['schemas']['Playlist']
export type Schedule = components['schemas']['DeviceSchedule']

/** The URL of an image in a format a browser shows (the original as generated or uploaded). */
export const imageUrl = (imageId: string) => `/api/images/${encodeURIComponent(imageId)}/original`

export type Screen = paths['/api/screens/{id}']['get']['responses'][200]['content']['application/json']
