// The render worker: one job at a time from the pool (render-pool.ts), answered as data. The pool
// ends this thread when a job overruns its time, and Node ends it when it passes its heap limit
// (resourceLimits), so a runaway template costs one worker, never the service.
import { parentPort } from 'node:worker_threads'
import { builtinScreens } from './builtin/index.js'
import { htmlToPng, RenderError, renderHtml, templateScope, warmRenderer } from './render.js'
import type { RenderJob, RenderResult } from './render-job.js'

async function run(job: RenderJob): Promise<RenderResult> {
  try {
    const builtin = job.builtin ? builtinScreens[job.builtin] : undefined
    if (job.builtin && !builtin) return { ok: false, code: 'SCREEN_RENDER_FAILED', message: `no built-in screen "${job.builtin}"` }
    if (builtin && builtin.source !== 'none' && (job.data === null || job.data === undefined))
      return { ok: false, code: 'SCREEN_NO_DATA', message: `the ${builtin.name} screen has no data yet: its source has not answered` }
    const template = builtin?.template ?? job.template
    if (!template) return { ok: false, code: 'SCREEN_RENDER_FAILED', message: 'the screen has no template' }
    let prepared: Record<string, unknown> | undefined
    if (builtin) {
      try {
        prepared = builtin.prepare({
          raw: job.data ?? undefined,
          variables: job.variables,
          now: new Date(job.now),
          timeZone: job.timeZone,
          ...(job.device ? { device: job.device } : {}),
        })
      } catch (err) {
        return { ok: false, code: 'SCREEN_RENDER_FAILED', message: `${builtin.name}: ${err instanceof Error ? err.message : String(err)}` }
      }
    }
    const html = await renderHtml(template, templateScope(job, prepared))
    const css = [builtin?.css, job.css].filter(Boolean).join('\n')
    if (job.htmlOnly) return { ok: true, png: new Uint8Array(0), html, ...(css ? { css } : {}) }
    const png = await htmlToPng(html, css || undefined, job.width, job.height)
    // A copy with a buffer of its own, transferred (not cloned) to the main thread.
    return { ok: true, png: new Uint8Array(png), html }
  } catch (err) {
    if (err instanceof RenderError) return { ok: false, code: err.code, message: err.message }
    return { ok: false, code: 'SCREEN_RENDER_FAILED', message: err instanceof Error ? err.message : String(err) }
  }
}

// Ready once the fonts are loaded: the pool hands over no job before (its clock starts with the job).
void warmRenderer().then(
  () => parentPort?.postMessage({ ready: true }),
  () => parentPort?.postMessage({ ready: true }),
)

parentPort?.on('message', async (msg: { id: number; job: RenderJob }) => {
  const result = await run(msg.job)
  parentPort?.postMessage({ id: msg.id, result }, result.ok ? [result.png.buffer as ArrayBuffer] : [])
})
