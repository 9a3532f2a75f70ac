// What the screen renderer is asked and answers, shared by the pool (main thread) and its worker.
import type { ScreenDeviceContext } from './context.js'

export type RenderJob = {
  /** A Liquid template producing HTML; or a built-in screen's name (its template and prepare()). */
  template?: string
  builtin?: string
  css?: string
  variables: Record<string, unknown>
  /** The screen's data: parsed JSON (webhook, JSON URL), the body of an ICS feed, or nothing yet. */
  data: unknown
  now: string
  timeZone: string
  device?: ScreenDeviceContext
  width: number
  height: number
  /**
   * Who draws the HTML: Takumi in the worker, or Chromium (chromium.ts), for which the worker
   * stops at the HTML and answers it with the CSS to apply (`htmlOnly`).
   */
  htmlOnly?: boolean
}

export const RENDERERS = ['takumi', 'chromium'] as const
export type Renderer = (typeof RENDERERS)[number]

export type RenderFailure = { code: RenderErrorCode; message: string }
export type RenderResult = { ok: true; png: Uint8Array; html: string; css?: string } | ({ ok: false } & RenderFailure)

type RenderErrorCode =
  | 'SCREEN_TEMPLATE_INVALID'
  | 'SCREEN_RENDER_FAILED'
  | 'SCREEN_RENDER_TIMEOUT'
  | 'SCREEN_RENDER_MEMORY'
  | 'SCREEN_BUSY'
  | 'SCREEN_NO_DATA'
  | 'SCREEN_RENDERER_UNAVAILABLE'
