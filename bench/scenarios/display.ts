// display: 1024×1024 PNG → 800×480 1-bit BMP, Spectra 6 PNG and 4-grey PNG. Ours (sharp decode +
// resize, our dithering to the display's inks with the palette's default method — blue noise for
// 1 bit, Floyd–Steinberg in CIELAB against the measured inks for Spectra 6, Floyd–Steinberg for
// 4 greys — and our BMP / palette-PNG writer)
// against the plain sharp palette pipeline (png({ palette: true, colours, dither }), libimagequant
// with an adaptive palette) on the same image. Both sides run in this process, alternating per
// image; per image the wall time and the process's CPU time (user + system, which includes libvips
// threads).
import sharp from 'sharp'
import { encodeVariant, renderForDisplay, type VariantFormat } from '../../src/images/convert.js'
import { createConversionPool } from '../../src/images/conversion-pool.js'
import { DISPLAY_PRESETS, PALETTES, type DisplayProfile, type Rgb } from '../../src/images/profiles.js'
import type { Scenario } from '../lib/context.js'
import { summarize, type Metric, type ScenarioResult } from '../lib/report.js'

const WHITE = { r: 255, g: 255, b: 255, alpha: 1 }

type Case = { name: string; format: VariantFormat; profile: DisplayProfile; colours: number; palette: readonly Rgb[] }
const cases: Case[] = [
  { name: '1-bit BMP (sharp: 2-colour PNG)', format: 'bmp1', profile: DISPLAY_PRESETS['bw-800x480'], colours: 2, palette: PALETTES.bw },
  { name: 'Spectra 6 PNG', format: 'png-spectra6', profile: DISPLAY_PRESETS.spectra6, colours: 6, palette: PALETTES.spectra6 },
  { name: '4-grey PNG', format: 'png-gray4', profile: DISPLAY_PRESETS.gray4, colours: 4, palette: PALETTES.gray4 },
]

/** A deterministic photo-like test card: smooth colour fields, a few hard edges, mild noise. */
async function testImage(): Promise<Buffer> {
  const size = 1024
  const raw = Buffer.alloc(size * size * 3)
  let seed = 0x9e3779b9
  const rand = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 0x100000000
  }
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = (y * size + x) * 3
      const n = (rand() - 0.5) * 24
      const inDisc = (x - 600) ** 2 + (y - 400) ** 2 < 180 ** 2
      const r = inDisc ? 220 : 128 + 120 * Math.sin(x / 97)
      const g = inDisc ? 60 : 128 + 120 * Math.sin(y / 131 + 1)
      const b = x > 800 && y > 700 ? 30 : 128 + 120 * Math.cos((x + y) / 173)
      raw[i] = clamp(r + n)
      raw[i + 1] = clamp(g + n)
      raw[i + 2] = clamp(b + n)
    }
  }
  return sharp(raw, { raw: { width: size, height: size, channels: 3 } })
    .png()
    .toBuffer()
}

const clamp = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : Math.round(v))

async function ours(input: Buffer, c: Case): Promise<Buffer> {
  const pixels = await renderForDisplay(input, c.profile)
  return (await encodeVariant(pixels, c.format)).data
}

async function plainSharp(input: Buffer, c: Case): Promise<Buffer> {
  return sharp(input)
    .rotate()
    .resize(c.profile.width, c.profile.height, { fit: 'cover', background: WHITE })
    .flatten({ background: WHITE })
    .png({ palette: true, colours: c.colours, dither: 1.0 })
    .toBuffer()
}

type Sample = { wallMs: number; cpuMs: number }
async function time(fn: () => Promise<Buffer>): Promise<Sample & { bytes: number }> {
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  const out = await fn()
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6
  const cpu = process.cpuUsage(cpu0)
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, bytes: out.length }
}

/** Does sharp's output use only the display's colours? (It picks its own palette, so usually not.) */
async function coloursOutside(png: Buffer, palette: readonly Rgb[]): Promise<number> {
  const { data, info } = await sharp(png).toColourspace('srgb').raw().toBuffer({ resolveWithObject: true })
  const allowed = new Set(palette.map(([r, g, b]) => (r << 16) | (g << 8) | b))
  const seen = new Set<number>()
  for (let i = 0; i < data.length; i += info.channels) {
    const key = (data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!
    if (!allowed.has(key)) seen.add(key)
  }
  return seen.size
}

export const display: Scenario = {
  name: 'display',
  summary: '1024×1024 PNG → 800×480 1-bit BMP, Spectra 6 and 4-grey PNG: ours vs sharp palette PNG, ms per image',
  async run(ctx): Promise<ScenarioResult> {
    const rounds = ctx.quick ? 3 : 10
    const warmup = ctx.quick ? 1 : 2
    const input = await testImage()
    const metrics: Metric[] = []
    const notes: string[] = []
    const perCase: Array<Record<string, unknown>> = []
    for (const c of cases) {
      const a: Array<Sample & { bytes: number }> = []
      const b: Array<Sample & { bytes: number }> = []
      let sharpOut: Buffer = Buffer.alloc(0)
      for (let i = 0; i < warmup + rounds; i++) {
        const x = await time(() => ours(input, c))
        const y = await time(async () => (sharpOut = await plainSharp(input, c)))
        if (i < warmup) continue
        a.push(x)
        b.push(y)
      }
      metrics.push({ name: `${c.name}: ms/image`, better: 'lower', ours: a.map((s) => s.wallMs), peer: b.map((s) => s.wallMs) })
      metrics.push({ name: `${c.name}: CPU ms/image`, better: 'lower', ours: a.map((s) => s.cpuMs), peer: b.map((s) => s.cpuMs) })
      const outside = await coloursOutside(sharpOut, c.palette)
      perCase.push({ case: c.name, oursBytes: a[0]?.bytes, sharpBytes: b[0]?.bytes, sharpColoursOutsidePalette: outside })
      notes.push(
        `${c.name}: ours ${a[0]?.bytes} bytes, sharp ${b[0]?.bytes} bytes; sharp's image has ${outside} colour(s) the display cannot show (its palette is adaptive).`,
      )
      ctx.log(
        `display ${c.name}: ours ${summarize(a.map((s) => s.wallMs))?.median.toFixed(0)} ms, sharp ${summarize(b.map((s) => s.wallMs))?.median.toFixed(0)} ms`,
      )
    }

    // Throughput of the conversion pool (full only): 8 full bw conversions (BMP + PNG) with 1
    // and with 2 worker threads, alternated. Any gain comes from overlapping images.
    let queue: Record<string, unknown> | undefined
    if (!ctx.quick) {
      const runs: Record<'1' | '2', number[]> = { '1': [], '2': [] }
      const profile: DisplayProfile = DISPLAY_PRESETS['bw-800x480']
      for (let i = 0; i < 1 + 3; i++) {
        for (const n of [1, 2] as const) {
          // Worker threads, as the service converts (src/images/conversion-pool.ts); started before the clock.
          const q = createConversionPool({ threads: n })
          await q.convert('warm-up', input, profile)
          const t0 = performance.now()
          await Promise.all(Array.from({ length: 8 }, () => q.convert('bench', input, profile)))
          if (i > 0) runs[String(n) as '1' | '2'].push((performance.now() - t0) / 8)
          await q.close()
        }
      }
      queue = { images: 8, perImageMs: { concurrency1: summarize(runs['1']), concurrency2: summarize(runs['2']) } }
      notes.push(
        `Conversion pool, 8 full bw conversions (BMP + PNG) at once, ms per image: 1 worker thread ${summarize(runs['1'])?.median.toFixed(0)}, 2 worker threads ${summarize(runs['2'])?.median.toFixed(0)}.`,
      )
    }
    notes.unshift(
      `Input: 1024×1024 synthetic RGB PNG, output 800×480 (fit cover); sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}, sharp.concurrency() = ${sharp.concurrency()}; ${warmup} warm-up image(s) per case, then ${rounds} alternating pairs.`,
    )
    return {
      scenario: 'display',
      ours: 'our display pipeline',
      peer: 'sharp png({ palette: true })',
      rounds,
      metrics,
      notes,
      details: { cases: perCase, queue, sharp: sharp.versions.sharp, vips: sharp.versions.vips },
    }
  },
}
