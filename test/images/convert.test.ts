// Conversion for displays: for every profile the right files come out, at the display's size, in
// the right format; palette files hold only the palette's colours (the pure inks; which index
// each pixel carries is checked in palettes.test.ts); the 1-bit BMP has the exact
// BMP3 layout (800×480 → 48,062 bytes) and the same pixels as the 1-bit PNG; mid-grey dithers to
// about half black; cover crops and contain pads with white; EXIF orientation is applied; alpha
// lands on white; something that is not an image is refused with a clear error.
import sharp from 'sharp'
import t from 'tap'
import { ImageInputError, convertForDisplay, formatsFor, mainVariant } from '../../src/images/convert.js'
import { INKS, PALETTES, UNUSED_CODE_COLOUR, type DisplayProfile, type Rgb, type Variant } from '../../src/images/profiles.js'
import { decodeIndexedBmp, decodeRgb, drawnPng, histogram, key, pixel, pngHeader, readBmpHeader, solidPng } from './pixels.js'

const W = 800
const H = 480

// Vertical stripes of every palette colour plus a grey ramp, so every palette has a use for all
// of its entries. Full-height stripes survive the cover crop (1024×768 → 800×480 trims rows).
const stripes: Rgb[] = [
  [0, 0, 0],
  [255, 255, 255],
  [255, 0, 0],
  [0, 255, 0],
  [0, 0, 255],
  [255, 255, 0],
  [255, 128, 0],
]
let card: Buffer

t.before(async () => {
  card = await drawnPng(1024, 768, (x, y) => {
    const s = Math.floor(x / 128)
    if (s < stripes.length) return stripes[s]!
    const v = Math.round((y / 767) * 255)
    return [v, v, v]
  })
})

const byFormat = (vs: Variant[]) => new Map(vs.map((v) => [v.format, v]))

t.test('each profile yields its formats at the display size', async (t) => {
  const expected: Array<[string, string[], string]> = [
    ['bw', ['bmp1', 'png1'], 'bmp1'],
    ['gray4', ['png-gray4'], 'png-gray4'],
    ['spectra6', ['png-spectra6'], 'png-spectra6'],
    ['acep7', ['png-acep7'], 'png-acep7'],
    ['color', ['jpeg', 'png'], 'jpeg'],
    ['sepia-ink', ['jpeg', 'png'], 'jpeg'], // unknown palette → full colour
  ]
  for (const [palette, formats, main] of expected) {
    const profile: DisplayProfile = { width: W, height: H, palette }
    t.same(formatsFor(profile), formats, `${palette}: formats`)
    t.equal(mainVariant(profile), main, `${palette}: main variant`)
    const variants = await convertForDisplay(card, profile)
    t.same(
      variants.map((v) => v.format),
      formats,
      `${palette}: variants produced, main first`,
    )
    for (const v of variants) {
      t.equal(v.width, W, `${palette}/${v.format} width field`)
      t.equal(v.height, H, `${palette}/${v.format} height field`)
      if (v.format === 'bmp1') {
        t.equal(v.contentType, 'image/bmp')
        continue
      }
      const meta = await sharp(v.data).metadata()
      t.equal(meta.width, W, `${palette}/${v.format} decoded width`)
      t.equal(meta.height, H, `${palette}/${v.format} decoded height`)
      t.equal(meta.channels, 3, `${palette}/${v.format} decodes to RGB, no alpha`)
      if (v.format === 'jpeg') {
        t.equal(v.contentType, 'image/jpeg')
        t.equal(meta.format, 'jpeg')
      } else {
        t.equal(v.contentType, 'image/png')
        t.equal(meta.format, 'png')
      }
    }
  }
})

t.test('palette PNGs are indexed at the smallest bit depth and hold only palette colours', async (t) => {
  const cases: Array<[string, string, readonly Rgb[], number]> = [
    ['bw', 'png1', PALETTES.bw, 1],
    ['gray4', 'png-gray4', PALETTES.gray4, 2],
    ['spectra6', 'png-spectra6', PALETTES.spectra6, 4],
    ['acep7', 'png-acep7', PALETTES.acep7, 4],
  ]
  for (const [palette, format, colours, depth] of cases) {
    const v = byFormat(await convertForDisplay(card, { width: W, height: H, palette })).get(format as Variant['format'])!
    const ihdr = pngHeader(v.data)
    t.equal(ihdr.colourType, 3, `${format}: colour type 3 (indexed)`)
    t.equal(ihdr.bitDepth, depth, `${format}: bit depth ${depth}`)
    const counts = histogram(await decodeRgb(v.data))
    const allowed = new Set(colours.map(([r, g, b]) => key(r, g, b)))
    const outside = [...counts.keys()].filter((k) => !allowed.has(k))
    t.same(
      outside.map((k) => k.toString(16)),
      [],
      `${format}: no colour outside the palette`,
    )
    // Spectra 6's table has an entry for code 4, which is no ink on that panel (see palettes.test.ts).
    const inks = INKS[palette as keyof typeof INKS].length
    t.equal(counts.size, inks, `${format}: every ink is used on the test card`)
    t.notOk(counts.has(key(...UNUSED_CODE_COLOUR)), `${format}: the unused code's colour never appears`)
  }
})

t.test('1-bit BMP: BMP3 header, 48,062 bytes at 800×480, same pixels as the 1-bit PNG', async (t) => {
  const variants = byFormat(await convertForDisplay(card, { width: W, height: H, palette: 'bw' }))
  const bmp = variants.get('bmp1')!.data
  t.equal(bmp.length, 48_062, 'total length')
  const h = readBmpHeader(bmp)
  t.equal(h.signature, 'BM')
  t.equal(h.fileSize, 48_062, 'file size field')
  t.equal(h.pixelOffset, 62, 'pixel data offset: 14 + 40 + 2 colour entries')
  t.equal(h.headerSize, 40, 'BITMAPINFOHEADER')
  t.equal(h.width, 800)
  t.equal(h.height, 480, 'positive height: bottom-up rows')
  t.equal(h.planes, 1)
  t.equal(h.bitCount, 1)
  t.equal(h.compression, 0, 'BI_RGB')
  t.equal(h.imageSize, 480 * 100, 'image size field: 100-byte rows')
  t.same(h.table, [
    [0, 0, 0],
    [255, 255, 255],
  ])

  const fromBmp = decodeIndexedBmp(bmp)
  const fromPng = await decodeRgb(variants.get('png1')!.data)
  t.ok(fromBmp.data.equals(fromPng.data), 'BMP rows (bottom-up, MSB first) decode to exactly the PNG pixels')
  // Orientation check on real content: the first stripe (x < 100 after scaling) is black, the
  // second white, in both the top and bottom row.
  t.same(pixel(fromBmp, 10, 0), [0, 0, 0], 'top-left is the black stripe')
  t.same(pixel(fromBmp, 10, H - 1), [0, 0, 0], 'bottom-left is the black stripe')
  t.same(pixel(fromBmp, 150, H - 1), [255, 255, 255], 'second stripe is white')
})

t.test('mid-grey dithers to about half black', async (t) => {
  const grey = await solidPng(200, 200, [128, 128, 128])
  const [bmp, png] = await convertForDisplay(grey, { width: 200, height: 200, palette: 'bw' })
  const counts = histogram(decodeIndexedBmp(bmp!.data))
  const black = (counts.get(key(0, 0, 0)) ?? 0) / (200 * 200)
  t.ok(black >= 0.45 && black <= 0.55, `black fraction ${black.toFixed(4)} is within 0.45..0.55`)
  t.equal(counts.size, 2, 'only black and white')
  t.ok((await decodeRgb(png!.data)).data.equals(decodeIndexedBmp(bmp!.data).data), 'PNG and BMP agree')

  // Darker and lighter greys move the fraction the right way (tone is kept, not thresholded).
  const fraction = async (v: number) => {
    const [b] = await convertForDisplay(await solidPng(200, 200, [v, v, v]), { width: 200, height: 200, palette: 'bw' })
    return (histogram(decodeIndexedBmp(b!.data)).get(0) ?? 0) / (200 * 200)
  }
  const dark = await fraction(64)
  const light = await fraction(192)
  t.ok(dark > 0.7 && dark < 0.8, `grey 64 is ~75% black (${dark.toFixed(3)})`)
  t.ok(light > 0.2 && light < 0.3, `grey 192 is ~25% black (${light.toFixed(3)})`)
})

t.test('mid-grey on 4 greys mixes the two middle levels', async (t) => {
  const [v] = await convertForDisplay(await solidPng(200, 200, [128, 128, 128]), { width: 200, height: 200, palette: 'gray4' })
  const counts = histogram(await decodeRgb(v!.data))
  t.same(
    [...counts.keys()].sort((a, b) => a - b),
    [key(85, 85, 85), key(170, 170, 170)],
    'only 85 and 170',
  )
  const dark = (counts.get(key(85, 85, 85)) ?? 0) / (200 * 200)
  t.ok(dark > 0.45 && dark < 0.55, `about half at 85 (${dark.toFixed(3)})`)
})

t.test('cover fills the display, contain pads with white bands', async (t) => {
  const wide = await solidPng(1600, 200, [200, 30, 30])
  const red: [number, number, number] = [200, 30, 30]
  const white: [number, number, number] = [255, 255, 255]

  const cover = byFormat(await convertForDisplay(wide, { width: W, height: H, palette: 'color', fit: 'cover' }))
  const c = await decodeRgb(cover.get('png')!.data)
  for (const y of [0, 240, H - 1]) t.same(pixel(c, 400, y), red, `cover: row ${y} is image`)
  const coverDefault = byFormat(await convertForDisplay(wide, { width: W, height: H, palette: 'color' }))
  t.ok(coverDefault.get('png')!.data.equals(cover.get('png')!.data), 'cover is the default')

  // 1600×200 scaled to 800 wide is 100 rows high, centred: rows 190..289 are image.
  const contain = byFormat(await convertForDisplay(wide, { width: W, height: H, palette: 'color', fit: 'contain' }))
  const p = await decodeRgb(contain.get('png')!.data)
  t.equal(p.width, W)
  t.equal(p.height, H)
  for (const y of [0, 100, 185]) t.same(pixel(p, 400, y), white, `contain: row ${y} is the top band`)
  for (const y of [195, 240, 285]) t.same(pixel(p, 400, y), red, `contain: row ${y} is image`)
  for (const y of [295, 400, H - 1]) t.same(pixel(p, 400, y), white, `contain: row ${y} is the bottom band`)

  // On a 1-bit display the bands are white paper, the image dithered between them.
  const [bmp] = await convertForDisplay(wide, { width: W, height: H, palette: 'bw', fit: 'contain' })
  const b = decodeIndexedBmp(bmp!.data)
  let bandBlack = 0
  for (let y = 0; y < 185; y++) for (let x = 0; x < W; x++) if (pixel(b, x, y)[0] === 0) bandBlack++
  t.equal(bandBlack, 0, 'bw contain: top band is all white')
})

t.test('EXIF orientation is applied before resizing', async (t) => {
  // Stored 300×100, black in the left third; orientation 6 means "rotate 90° clockwise to view",
  // so upright it is 100×300 with black in the top third.
  const stored = await sharp(await drawnPng(300, 100, (x) => (x < 100 ? [0, 0, 0] : [255, 255, 255])))
    .jpeg({ quality: 95 })
    .withMetadata({ orientation: 6 })
    .toBuffer()
  t.equal((await sharp(stored).metadata()).orientation, 6, 'fixture carries the EXIF tag')
  const [, png] = await convertForDisplay(stored, { width: 100, height: 300, palette: 'color' })
  const p = await decodeRgb(png!.data)
  const near = (px: number[], v: number) => px.every((c) => Math.abs(c - v) <= 8)
  t.ok(near(pixel(p, 50, 20), 0), `top is black: ${pixel(p, 50, 20)}`)
  t.ok(near(pixel(p, 50, 280), 255), `bottom is white: ${pixel(p, 50, 280)}`)
})

t.test('transparent areas become white and greyscale input works', async (t) => {
  const clear = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
    .png()
    .toBuffer()
  const [bmp] = await convertForDisplay(clear, { width: 64, height: 64, palette: 'bw' })
  t.same([...histogram(decodeIndexedBmp(bmp!.data)).keys()], [key(255, 255, 255)], 'fully transparent black → white paper')

  const grey = await sharp(Buffer.alloc(64 * 64, 0), { raw: { width: 64, height: 64, channels: 1 } })
    .toColourspace('b-w')
    .png()
    .toBuffer()
  t.equal((await sharp(grey).metadata()).channels, 1, 'fixture is a one-channel PNG')
  const [b2] = await convertForDisplay(grey, { width: 32, height: 32, palette: 'bw' })
  t.same([...histogram(decodeIndexedBmp(b2!.data)).keys()], [key(0, 0, 0)], 'black greyscale input → all black')
  const [spectra] = await convertForDisplay(grey, { width: 32, height: 32, palette: 'spectra6' })
  t.same([...histogram(await decodeRgb(spectra!.data)).keys()], [key(0, 0, 0)], 'and on a colour palette')
})

t.test('input that is not an image is refused with a clear error', async (t) => {
  const jpeg = await sharp({ create: { width: 300, height: 200, channels: 3, background: 'red' } })
    .jpeg()
    .toBuffer()
  const bad: Array<[string, Buffer]> = [
    ['text', Buffer.from('this is not an image')],
    ['html', Buffer.from('<!doctype html><html></html>')],
    ['empty', Buffer.alloc(0)],
    ['PNG signature only', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0])],
    ['truncated JPEG', jpeg.subarray(0, 300)],
  ]
  for (const [what, input] of bad) {
    const err = await convertForDisplay(input, { width: W, height: H, palette: 'bw' }).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(err instanceof ImageInputError, `${what}: ImageInputError`)
    const e = err as ImageInputError
    t.equal(e.statusCode, 422, `${what}: maps to 422`)
    t.equal(e.code, 'INVALID_IMAGE', `${what}: code`)
    t.match(e.message, /image/i, `${what}: message says what is wrong (${e.message})`)
  }
  await t.rejects(convertForDisplay(jpeg, { width: 0, height: H, palette: 'bw' }), { statusCode: 400, code: 'INVALID_DISPLAY_PROFILE' })
})
