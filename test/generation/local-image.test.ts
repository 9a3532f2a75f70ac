// The local model draws what the prompt names: the same prompt, size and seed give the same
// bytes; other prompts other pictures; a named subject is drawn where the scene says it stands;
// the time of day colours the sky; the prompt is the caption, drawn in our own stroke font, which
// needs no installed font (checked in a child process whose fontconfig knows no fonts).
import t from 'tap'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { readPrompt } from '../../src/generation/local-image/prompt-words.js'
import { captionLayout, drawLocalImage, renderLocalImage } from '../../src/generation/local-image/render.js'
import { hasGlyph, normaliseCaption, textUnits } from '../../src/generation/local-image/stroke-font.js'
import { seedFor } from '../../src/generation/providers/local.js'
import { loadSharp } from '../../src/images/sharp.js'

const W = 400
const H = 240
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

type Raw = { data: Buffer; width: number; height: number }
async function raw(png: Buffer): Promise<Raw> {
  const sharp = await loadSharp()
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true })
  return { data, width: info.width, height: info.height }
}
const render = (prompt: string, seed = 7, width = W, height = H) => renderLocalImage({ prompt, width, height, seed })

type Box = { x: number; y: number; width: number; height: number }
function pixelsIn(img: Raw, box: Box, each: (i: number) => void) {
  const x0 = Math.max(0, Math.floor(box.x))
  const x1 = Math.min(img.width, Math.ceil(box.x + box.width))
  const y0 = Math.max(0, Math.floor(box.y))
  const y1 = Math.min(img.height, Math.ceil(box.y + box.height))
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) each((y * img.width + x) * 3)
}
/** Mean absolute difference per channel (0–255) over a box. */
function meanDiff(a: Raw, b: Raw, box: Box): number {
  let sum = 0
  let n = 0
  pixelsIn(a, box, (i) => {
    sum += Math.abs(a.data[i]! - b.data[i]!) + Math.abs(a.data[i + 1]! - b.data[i + 1]!) + Math.abs(a.data[i + 2]! - b.data[i + 2]!)
    n += 3
  })
  return sum / n
}
/** The share of a box's pixels for which `test(r, g, b)` holds. */
function share(img: Raw, box: Box, test: (r: number, g: number, b: number) => boolean): number {
  let hits = 0
  let n = 0
  pixelsIn(img, box, (i) => {
    n++
    if (test(img.data[i]!, img.data[i + 1]!, img.data[i + 2]!)) hits++
  })
  return hits / n
}
const whole: Box = { x: 0, y: 0, width: W, height: H }
const above = (y: number): Box => ({ x: 0, y: 0, width: W, height: Math.floor(y) })

t.test('the same prompt, size and seed give the same bytes; the seed and the size are honoured', async (t) => {
  const prompt = 'a lighthouse on a rocky coast at dusk'
  const seed = seedFor(`${prompt}\n`)
  const first = await render(prompt, seed)
  t.equal(sha256(await render(prompt, seed)), sha256(first), 'byte for byte')
  t.not(sha256(await render(prompt, seed + 1)), sha256(first), 'another seed arranges it differently')
  const wide = await raw(await render(prompt, seed, 800, 480))
  t.same([wide.width, wide.height], [800, 480])
})

t.test('different prompts give pictures that differ far above noise, also prompts it knows nothing of', async (t) => {
  const pairs = [
    ['a lighthouse on a rocky coast at dusk', 'a cat in a snowy forest at night'],
    ['a red car', 'a blue bicycle'],
    ['hello', 'world'],
  ] as const
  for (const [a, b] of pairs) {
    const band = drawLocalImage({ prompt: a, width: W, height: H, seed: 0 }).caption.height
    const [ra, rb] = [await raw(await render(a, seedFor(`${a}\n`))), await raw(await render(b, seedFor(`${b}\n`)))]
    t.equal(meanDiff(ra, await raw(await render(a, seedFor(`${a}\n`))), whole), 0, `the noise: "${a}" again is identical`)
    const diff = meanDiff(ra, rb, above(H - band - 1))
    t.ok(diff > 5, `"${a}" and "${b}" differ above the caption by ${diff.toFixed(1)} of 255 on average`)
  }
})

t.test('a named subject is drawn where the scene places it', async (t) => {
  // Same seed, same time of day: the prompts differ by the subject alone.
  const cases = [
    { subject: 'lighthouse', with: 'a lighthouse by the sea at noon', without: 'the sea at noon' },
    { subject: 'cat', with: 'a cat in a field at dusk', without: 'a field at dusk' },
    { subject: 'dog', with: 'a dog in the garden', without: 'the garden' },
    { subject: 'house', with: 'a house under the moon', without: 'under the moon' },
    { subject: 'boat', with: 'a boat on the lake at dawn', without: 'the lake at dawn' },
  ] as const
  for (const c of cases) {
    const drawn = drawLocalImage({ prompt: c.with, width: W, height: H, seed: 11 })
    const plain = drawLocalImage({ prompt: c.without, width: W, height: H, seed: 11 })
    const at = drawn.placed.find((p) => p.subject === c.subject)
    t.ok(at, `"${c.with}" places a ${c.subject}`)
    t.notOk(
      plain.placed.some((p) => p.subject === c.subject),
      `"${c.without}" places none`,
    )
    if (!at) continue
    const [a, b] = [await raw(await render(c.with, 11)), await raw(await render(c.without, 11))]
    let changed = 0
    let n = 0
    pixelsIn(a, at.box, (i) => {
      n++
      if (Math.abs(a.data[i]! - b.data[i]!) + Math.abs(a.data[i + 1]! - b.data[i + 1]!) + Math.abs(a.data[i + 2]! - b.data[i + 2]!) > 60)
        changed++
    })
    t.ok(changed / n > 0.25, `the ${c.subject}'s box changed in ${((100 * changed) / n).toFixed(0)}% of its pixels`)
  }
  // The lighthouse's own colours: its red bands, which neither sea nor sky has by day.
  const lighthouse = drawLocalImage({ prompt: 'a lighthouse by the sea at noon', width: W, height: H, seed: 11 }).placed.find(
    (p) => p.subject === 'lighthouse',
  )!
  const red = (r: number, g: number, b: number) => r > 150 && g < 90 && b < 90
  t.ok(
    share(await raw(await render('a lighthouse by the sea at noon', 11)), lighthouse.box, red) > 0.1,
    'red bands where the lighthouse stands',
  )
  t.equal(share(await raw(await render('the sea at noon', 11)), lighthouse.box, red), 0, 'and none there without it')
})

t.test('the time of day colours the sky', async (t) => {
  const top = (img: Raw) => {
    const sum = [0, 0, 0]
    pixelsIn(img, { x: 0, y: 0, width: W, height: 10 }, (i) => {
      for (let c = 0; c < 3; c++) sum[c]! += img.data[i + c]!
    })
    return sum.map((s) => s / (W * 10))
  }
  const luminance = ([r, g, b]: number[]) => 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
  const night = top(await raw(await render('a field at night', 3)))
  const day = top(await raw(await render('a field at noon', 3)))
  t.ok(luminance(night) < luminance(day) / 3, 'the night sky is dark, the day sky bright')
  // Just above the horizon (the field starts at 56–64% of the scene's height): warm at dusk, blue by day.
  const band = drawLocalImage({ prompt: 'a field at dusk', width: W, height: H, seed: 3 }).caption.height
  const horizonBox = { x: 0, y: (H - band) * 0.5, width: W, height: 4 }
  const dusk = await raw(await render('a field at dusk', 3))
  const noon = await raw(await render('a field at noon', 3))
  t.ok(share(dusk, horizonBox, (r, _g, b) => r > b + 40) > 0.9, 'dusk: an orange horizon')
  t.ok(share(noon, horizonBox, (r, _g, b) => b > r) > 0.9, 'noon: a blue one')
})

t.test('the prompt is the caption, drawn where the scene is not', async (t) => {
  // The same subjects and time in other words: the same scene, another caption.
  t.same(readPrompt('a cat at night'), readPrompt('one cat during the night'))
  const { caption } = drawLocalImage({ prompt: 'a cat at night', width: W, height: H, seed: 5 })
  t.ok(caption.height > 0)
  t.same(caption.lines, ['a cat at night'])
  const [a, b] = [await raw(await render('a cat at night', 5)), await raw(await render('one cat during the night', 5))]
  const sceneRows = above(H - caption.height - 1)
  t.equal(meanDiff(a, b, sceneRows), 0, 'the scene above the caption is the same')
  const bandBox = { x: 0, y: Math.ceil(H - caption.height), width: W, height: Math.floor(caption.height) }
  t.ok(meanDiff(a, b, bandBox) > 5, 'the caption band differs with the wording')
  const ink = share(a, bandBox, (r, g, b) => r + g + b < 200)
  t.ok(ink > 0.01 && ink < 0.4, `dark strokes cover ${(ink * 100).toFixed(1)}% of the white caption band`)
  // The ink is where the text is: centred, so the band's outer margins stay blank.
  t.equal(
    share(a, { ...bandBox, width: W * 0.2 }, (r, g, b) => r + g + b < 200),
    0,
    'nothing in the left margin',
  )
})

t.test('the stroke font draws letters, digits and common punctuation; long prompts wrap and end with an ellipsis', async (t) => {
  const required = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.,!?:;-\'"()/&+=#%*'
  t.same(
    [...required].filter((c) => !hasGlyph(c)),
    [],
    'every one has its own glyph',
  )
  t.equal(normaliseCaption('  café\tcrème  '), 'cafe creme', 'accents are dropped, white space made one')

  const long = `${'a lighthouse on a rocky coast at dusk with gulls and boats and '.repeat(5)}the end`
  const layout = captionLayout(long, 800, 480)
  t.equal(layout.lines.length, 3, 'three lines at the most')
  const margin = 800 * 0.03
  for (const line of layout.lines) t.ok(textUnits(line) * layout.scale <= 800 - 2 * margin + 1e-9, `"${line}" fits`)
  t.ok(layout.lines.at(-1)!.endsWith('…'), 'the last ends with an ellipsis')
  t.ok(normaliseCaption(long).startsWith(layout.lines.join(' ').replace(/…$/, '')), 'wrapped at spaces, nothing skipped')
  t.ok(layout.height <= 480 * 0.25, 'the caption takes a quarter of the height at most')

  const word = 'x'.repeat(120)
  const broken = captionLayout(word, 400, 400)
  t.ok(
    broken.lines.length > 1 &&
      broken.lines
        .join('')
        .replace(/…$/, '')
        .split('')
        .every((c) => c === 'x'),
    'a word longer than a line is broken',
  )

  t.same(captionLayout('a quiet lake', 64, 48).lines, [], 'no caption where a line would not be legible')
  t.equal(drawLocalImage({ prompt: 'a quiet lake', width: 64, height: 48, seed: 1 }).caption.height, 0)
})

t.test('the caption needs no installed font: a process whose fontconfig has none draws the same bytes', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'dps-no-fonts-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const conf = join(dir, 'fonts.conf')
  await writeFile(conf, `<?xml version="1.0"?>\n<fontconfig><cachedir>${join(dir, 'cache')}</cachedir></fontconfig>\n`)
  const prompt = 'Hello, lighthouse! (A test: 0123456789)'
  // A control drawn with SVG text: it must change without fonts, or this child would prove nothing.
  const control = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><rect width="200" height="40" fill="#fff"/><text x="5" y="28" font-size="24">Hello lighthouse</text></svg>`
  const src = (p: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, '../../src', p)).href)
  const code = `
    const { renderLocalImage } = await import(${src('generation/local-image/render.ts')})
    const { loadSharp } = await import(${src('images/sharp.ts')})
    const { createHash } = await import('node:crypto')
    const sharp = await loadSharp()
    const hash = (b) => createHash('sha256').update(b).digest('hex')
    const picture = await renderLocalImage({ prompt: ${JSON.stringify(prompt)}, width: ${W}, height: ${H}, seed: 9 })
    const text = await sharp(Buffer.from(${JSON.stringify(control)})).png().toBuffer()
    console.log(JSON.stringify({ picture: hash(picture), text: hash(text) }))`
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    env: { ...process.env, FONTCONFIG_FILE: conf },
  })
  const child = JSON.parse(stdout.trim().split('\n').at(-1)!) as { picture: string; text: string }
  const sharp = await loadSharp()
  t.not(child.text, sha256(await sharp(Buffer.from(control)).png().toBuffer()), 'the child has no fonts: SVG text comes out differently')
  t.equal(child.picture, sha256(await render(prompt, 9)), 'the captioned picture is the same without fonts')
  t.notOk(drawLocalImage({ prompt, width: W, height: H, seed: 9 }).svg.includes('<text'), 'no SVG text in it')
})

t.test('the prompt is read for subjects, time and season; the negative prompt takes subjects out', async (t) => {
  const dusk = readPrompt('A lighthouse at dusk')
  t.same([...dusk.subjects].sort(), ['lighthouse', 'rock', 'water'])
  t.equal(dusk.time, 'dusk')
  t.same(readPrompt('sunset over the sea').time, 'dusk')
  t.ok(readPrompt('sunset over the sea').subjects.has('sun'))
  t.ok(readPrompt('birds and trees').plural.has('bird'), 'plurals are read as several')
  t.notOk(readPrompt('a bird').plural.has('bird'))
  t.equal(readPrompt('a snowy night in winter').season, 'winter')
  t.equal(readPrompt('snow falls at night').season, 'winter', '"falls" is not autumn')
  t.same([...readPrompt('a boat in the harbour', 'boats').subjects], ['water'], 'the negative prompt leaves the boat out')
  t.same([...readPrompt('qwerty zxcv').subjects], [])
})
