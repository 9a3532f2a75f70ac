// The default provider: draws a deterministic abstract image from the prompt (seeded by its
// hash) with sharp, and walks it through queued → running → done over `durationMs` so polling
// is exercised like a remote provider. No network, no key.
// Failure injection (documented, for tests and demos): a prompt starting with "!fail" fails.
import { createHash } from 'node:crypto'
import { loadSharp } from '../../images/sharp.js'
import type { GenerationInput, ImageProvider, PollResult, ProviderJob, StartResult } from '../provider.js'

/** A small deterministic PRNG (mulberry32): the same seed draws the same picture. */
function prng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function seedFor(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0)
}

/** SVG shapes only: text would need fonts the machine may not have. */
function drawSvg(input: Pick<GenerationInput, 'prompt' | 'width' | 'height' | 'seed'>): string {
  const rnd = prng(input.seed)
  const { width: w, height: h } = input
  const hue = Math.floor(rnd() * 360)
  const colour = (shift: number, l: number) => `hsl(${(hue + shift) % 360},${55 + Math.floor(rnd() * 35)}%,${l}%)`
  const shapes: string[] = []
  const count = 6 + Math.floor(rnd() * 10)
  for (let i = 0; i < count; i++) {
    const x = Math.floor(rnd() * w)
    const y = Math.floor(rnd() * h)
    const r = Math.floor((0.05 + rnd() * 0.3) * Math.min(w, h))
    const fill = colour(Math.floor(rnd() * 180), 25 + Math.floor(rnd() * 50))
    const opacity = (0.35 + rnd() * 0.6).toFixed(2)
    if (rnd() < 0.6) shapes.push(`<circle cx="${x}" cy="${y}" r="${r}" fill="${fill}" fill-opacity="${opacity}"/>`)
    else
      shapes.push(
        `<rect x="${x - r}" y="${y - r}" width="${r * 2}" height="${Math.floor(r * (0.5 + rnd()))}" fill="${fill}" fill-opacity="${opacity}" transform="rotate(${Math.floor(rnd() * 90)} ${x} ${y})"/>`,
      )
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">
<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${colour(0, 85)}"/><stop offset="1" stop-color="${colour(200, 20)}"/></linearGradient></defs>
<rect width="${w}" height="${h}" fill="url(#g)"/>${shapes.join('')}</svg>`
}

export async function renderLocalImage(input: Pick<GenerationInput, 'prompt' | 'width' | 'height' | 'seed'>): Promise<Buffer> {
  const sharp = await loadSharp()
  return sharp(Buffer.from(drawSvg(input)))
    .png()
    .toBuffer()
}

export function createLocalProvider(opts: { durationMs: number }): ImageProvider {
  return {
    name: 'local',
    async start(input: GenerationInput): Promise<StartResult> {
      return { providerJobId: `local-${input.seed.toString(16)}-${Date.now().toString(36)}`, state: { startedAt: Date.now() } }
    },
    async poll(job: ProviderJob): Promise<PollResult> {
      if (job.input.prompt.trimStart().startsWith('!fail'))
        return { status: 'failed', error: { code: 'LOCAL_INJECTED_FAILURE', message: 'failure injected by the prompt' } }
      const startedAt = Number(job.state.startedAt ?? 0)
      const elapsed = Date.now() - startedAt
      const queueMs = opts.durationMs / 3
      if (elapsed < queueMs) return { status: 'queued' }
      if (elapsed < opts.durationMs)
        return { status: 'running', progress: Math.round(((elapsed - queueMs) / (opts.durationMs - queueMs)) * 100) }
      return { status: 'succeeded', outputs: [{ data: await renderLocalImage(job.input), contentType: 'image/png' }] }
    },
    async cancel() {},
  }
}
