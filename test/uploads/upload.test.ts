// POST /api/upload over real multipart HTTP: size limit, type from the bytes, metadata
// stripped, keys that never use the client's file name, and what the owner can fetch.
import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import sharp from 'sharp'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

type Upload = { key: string; url: string; urlExpiresAt: string; size: number; contentType: string; width: number; height: number }
type Person = { token: string; id: string }

const LIMIT = 256 * 1024
let svc: TestApp
let alice: Person
let bob: Person

t.before(async () => {
  svc = await startApp(t, { env: { UPLOAD_MAX_BYTES: String(LIMIT), DEVICE_POLL_INTERVAL: '0' } })
  alice = await person()
  bob = await person()
})

async function person(): Promise<Person> {
  const { token, userId } = await signUp(makeClient(svc.url).client, uniqueEmail('upload'))
  return { token, id: userId }
}

type Part = { field?: string; name: string; type: string; data: Buffer } | { field: string; value: string }

async function upload(who: Person | null, parts: Part[]) {
  const form = new FormData()
  for (const p of parts) {
    if ('value' in p) form.append(p.field, p.value)
    else form.append(p.field ?? 'file', new Blob([new Uint8Array(p.data)], { type: p.type }), p.name)
  }
  const res = await appFetch(`${svc.url}/api/upload`, {
    method: 'POST',
    headers: who ? { authorization: `Bearer ${who.token}` } : {},
    body: form,
  })
  return { status: res.status, body: (await res.json()) as Upload & { message: string; code: string } }
}

const image = (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 3, background: { r: 200, g: 40, b: 90 } } })
const fetchBytes = async (url: string) => {
  const res = await appFetch(url)
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) }
}
const uuidKey = (userId: string, ext: string) =>
  new RegExp(`^uploads/${userId}/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\\.${ext}$`)

t.test("an image is stored under the uploader's key and the returned url serves it", async (t) => {
  const png = await image(64, 48).png().toBuffer()
  const res = await upload(alice, [{ name: 'holiday.png', type: 'image/png', data: png }])
  t.equal(res.status, 201)
  t.match(res.body.key, uuidKey(alice.id, 'png'))
  t.match(res.body, { contentType: 'image/png', width: 64, height: 48 })
  t.ok(Date.parse(res.body.urlExpiresAt) > Date.now(), 'the link has an expiry in the future')
  const got = await fetchBytes(res.body.url)
  t.equal(got.status, 200, 'the url is fetchable without a session (it is signed)')
  t.equal(got.type, 'image/png')
  t.equal(got.body.length, res.body.size, 'size is what is stored')
  const meta = await sharp(got.body).metadata()
  t.match(meta, { format: 'png', width: 64, height: 48 })

  const fresh = await appFetch(`${svc.url}/api/upload/url?key=${encodeURIComponent(res.body.key)}`, {
    headers: { authorization: `Bearer ${alice.token}` },
  })
  t.equal(fresh.status, 200, 'the owner can get a fresh link')
  t.equal((await fetchBytes(((await fresh.json()) as { url: string }).url)).status, 200)
  const foreign = await appFetch(`${svc.url}/api/upload/url?key=${encodeURIComponent(res.body.key)}`, {
    headers: { authorization: `Bearer ${bob.token}` },
  })
  t.equal(foreign.status, 404, 'another user cannot')
  t.equal((await upload(null, [{ name: 'a.png', type: 'image/png', data: png }])).status, 401, 'uploading needs a session')
})

t.test('PNG, JPEG, WebP, GIF and AVIF are accepted, named by what they are', async (t) => {
  const cases: Array<[string, Buffer, string, string]> = [
    ['jpeg', await image(20, 10).jpeg().toBuffer(), 'image/jpeg', 'jpg'],
    ['webp', await image(20, 10).webp().toBuffer(), 'image/webp', 'webp'],
    ['gif', await image(20, 10).gif().toBuffer(), 'image/gif', 'gif'],
    ['avif', await image(20, 10).avif().toBuffer(), 'image/avif', 'avif'],
  ]
  for (const [what, data, type, ext] of cases) {
    // The declared type and name are wrong on purpose: only the bytes count.
    const res = await upload(alice, [{ name: 'picture.bin', type: 'application/octet-stream', data }])
    t.equal(res.status, 201, what)
    t.equal(res.body.contentType, type, `${what} detected from its bytes`)
    t.match(res.body.key, uuidKey(alice.id, ext))
    t.match(res.body, { width: 20, height: 10 })
    const got = await fetchBytes(res.body.url)
    t.equal(got.type, type)
  }
})

t.test('a file larger than UPLOAD_MAX_BYTES is refused with 413', async (t) => {
  // Far beyond the limit: refused from Content-Length before the body is read.
  const big = Buffer.concat([await image(8, 8).png().toBuffer(), Buffer.alloc(LIMIT * 2, 7)])
  const res = await upload(alice, [{ name: 'big.png', type: 'image/png', data: big }])
  t.equal(res.status, 413)
  t.match(res.body, { code: 'PAYLOAD_TOO_LARGE', message: new RegExp(String(LIMIT)) })
  // Just over the limit, within the multipart framing slack: caught while reading the part.
  const edge = await upload(alice, [{ name: 'edge.png', type: 'image/png', data: Buffer.alloc(LIMIT + 1, 1) }])
  t.equal(edge.status, 413)
  t.equal(edge.body.code, 'PAYLOAD_TOO_LARGE')
})

t.test('a text file renamed .png is refused with 415, as are other non-images', async (t) => {
  const text = await upload(alice, [{ name: 'notes.png', type: 'image/png', data: Buffer.from('just some text, not a picture\n') }])
  t.equal(text.status, 415)
  t.match(text.body, { code: 'UNSUPPORTED_MEDIA_TYPE', message: /PNG, JPEG, WebP, GIF and AVIF/ })
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>')
  t.equal(
    (await upload(alice, [{ name: 'x.png', type: 'image/png', data: svg }])).status,
    415,
    'SVG (an image sharp reads, but can carry script) is refused',
  )
  t.equal(
    (await upload(alice, [{ name: 'x.tif', type: 'image/tiff', data: await image(4, 4).tiff().toBuffer() }])).status,
    415,
    'TIFF is not on the list',
  )
  const truncated = (await image(40, 40).png().toBuffer()).subarray(0, 60)
  const broken = await upload(alice, [{ name: 'x.png', type: 'image/png', data: truncated }])
  t.ok([415, 422].includes(broken.status), `a truncated PNG is refused (${broken.status})`)
})

t.test('a JPEG with EXIF is stored without it, its orientation applied to the pixels', async (t) => {
  // 60×30 pixels with EXIF orientation 6 (display rotated 90°), a camera make and an owner.
  const input = await image(60, 30)
    .jpeg()
    .withExif({ IFD0: { Make: 'TestCam', Copyright: 'secret-owner-name' } })
    .withMetadata({ orientation: 6 })
    .toBuffer()
  const before = await sharp(input).metadata()
  t.equal(before.orientation, 6, 'the input carries EXIF orientation')
  t.ok(before.exif?.includes(Buffer.from('secret-owner-name')), 'and EXIF text')

  const res = await upload(alice, [{ name: 'IMG_0001.JPG', type: 'image/jpeg', data: input }])
  t.equal(res.status, 201)
  t.match(res.body, { contentType: 'image/jpeg', width: 30, height: 60 }, 'rotated upright: 30×60')
  const stored = (await fetchBytes(res.body.url)).body
  const after = await sharp(stored).metadata()
  t.equal(after.exif, undefined, 'no EXIF block')
  t.equal(after.orientation, undefined, 'no orientation tag left to apply twice')
  t.equal(after.xmp, undefined, 'no XMP')
  t.notOk(stored.includes(Buffer.from('secret-owner-name')), 'the owner name is nowhere in the file')
  t.notOk(stored.includes(Buffer.from('TestCam')), 'nor the camera make')
  t.match(after, { width: 30, height: 60 })
})

t.test('path-traversal file names never reach the key or the disk', async (t) => {
  const png = await image(8, 8).png().toBuffer()
  const names = [
    '../../../../etc/passwd.png',
    '..\\..\\windows\\evil.png',
    '/abs/olute.png',
    `uploads/${bob.id}/steal.png`,
    '%2e%2e%2fup.png',
    'a\u0000b.png',
  ]
  const keys: string[] = []
  for (const name of names) {
    const res = await upload(alice, [{ name, type: 'image/png', data: png }])
    t.equal(res.status, 201, JSON.stringify(name))
    t.match(res.body.key, uuidKey(alice.id, 'png'), `the key ignores ${JSON.stringify(name)}`)
    keys.push(res.body.key)
  }
  t.equal(new Set(keys).size, keys.length, 'every upload gets its own key')
  const objects = join(svc.dataDir, 'objects')
  const top = (await readdir(objects)).sort()
  // A cluster node (REDIS_URL) also keeps the marker object that proves its nodes share this store.
  const expected = process.env.REDIS_URL ? ['cluster', 'uploads'] : ['uploads']
  t.same(top, expected, 'nothing was written beside uploads/ (and the cluster marker)')
  const users = (await readdir(join(objects, 'uploads'))).sort()
  t.same(users, [alice.id], "only alice's folder (not bob's)")
  t.notOk(existsSync(join(svc.dataDir, 'etc')), 'nothing escaped DATA_DIR/objects')
})

t.test('an empty file, a missing part, two files and a non-multipart body are refused', async (t) => {
  const empty = await upload(alice, [{ name: 'empty.png', type: 'image/png', data: Buffer.alloc(0) }])
  t.equal(empty.status, 400)
  t.equal(empty.body.code, 'EMPTY_FILE')

  const noFile = await upload(alice, [{ field: 'caption', value: 'where is the file?' }])
  t.equal(noFile.status, 400)
  t.match(noFile.body, { code: 'FILE_REQUIRED', message: /no file part/ })
  const nothing = await upload(alice, [])
  t.equal(nothing.status, 400, 'an empty form')
  t.equal(nothing.body.code, 'FILE_REQUIRED')

  const png = await image(8, 8).png().toBuffer()
  const two = await upload(alice, [
    { name: 'a.png', type: 'image/png', data: png },
    { field: 'second', name: 'b.png', type: 'image/png', data: png },
  ])
  t.equal(two.status, 400)
  t.equal(two.body.code, 'TOO_MANY_FILES')

  const json = await appFetch(`${svc.url}/api/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ file: 'iVBORw0KGgo=' }),
  })
  t.equal(json.status, 415)
  t.match(await json.json(), { code: 'MULTIPART_REQUIRED' })

  // A body cut off in the middle of the file part (a dropped connection, a broken client).
  const boundary = 'dps-cut-off'
  const cut = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
    png.subarray(0, 20),
  ])
  const truncated = await appFetch(`${svc.url}/api/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: cut,
  })
  t.equal(truncated.status, 400, 'a truncated multipart body')
  t.equal(((await truncated.json()) as { code: string }).code, 'INVALID_MULTIPART')
})

t.test('direct upload: presigned PUT, then complete runs the same checks', async (t) => {
  const input = await image(60, 30)
    .jpeg()
    .withExif({ IFD0: { Copyright: 'direct-secret' } })
    .toBuffer()
  const pre = await appFetch(`${svc.url}/api/upload/presign`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ contentType: 'image/jpeg', size: input.length }),
  })
  t.equal(pre.status, 200)
  const p = (await pre.json()) as { key: string; url: string; method: string; headers: Record<string, string> }
  t.match(p.key, new RegExp(`^incoming/${alice.id}/`))
  t.equal((await appFetch(p.url, { method: p.method, headers: p.headers, body: input })).status, 200, 'the bytes go straight to storage')

  const complete = (who: Person, key: string) =>
    appFetch(`${svc.url}/api/upload/complete`, {
      method: 'POST',
      headers: { authorization: `Bearer ${who.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    })
  t.equal((await complete(bob, p.key)).status, 404, "bob cannot complete alice's upload")
  const done = await complete(alice, p.key)
  t.equal(done.status, 201)
  const rec = (await done.json()) as Upload
  t.match(rec.key, uuidKey(alice.id, 'jpg'))
  t.match(rec, { contentType: 'image/jpeg', width: 60, height: 30 })
  const stored = (await fetchBytes(rec.url)).body
  t.notOk(stored.includes(Buffer.from('direct-secret')), 'metadata stripped here too')
  t.equal(await svc.app.storage.head(p.key), null, 'the raw upload is removed')
  t.equal((await complete(alice, p.key)).status, 404, 'and cannot be completed twice')

  const tooBig = await appFetch(`${svc.url}/api/upload/presign`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ contentType: 'image/png', size: LIMIT + 1 }),
  })
  t.equal(tooBig.status, 413)

  const pre2 = (await (
    await appFetch(`${svc.url}/api/upload/presign`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ contentType: 'image/png', size: 10 }),
    })
  ).json()) as { key: string; url: string; headers: Record<string, string> }
  await appFetch(pre2.url, { method: 'PUT', headers: pre2.headers, body: 'not an image' })
  const bad = await complete(alice, pre2.key)
  t.equal(bad.status, 415, 'what was PUT is checked from its bytes')
  t.equal(await svc.app.storage.head(pre2.key), null, 'and removed')
})

t.test('an uploaded photo is sent to a paired device, converted for its display', async (t) => {
  const dev = await pairDevice(svc, alice.token, { name: 'Grey frame', palette: 'gray4', width: 400, height: 300 })
  const device = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
  t.teardown(() => device.end(true))
  await subscribe(device, dev.topics.image!)
  const arrived = nextMessage<{ imageId: string; url: string; format: string; width: number; height: number; sha256: string }>(
    device,
    dev.topics.image!,
  )

  const photo = await sharp({ create: { width: 1200, height: 900, channels: 3, background: { r: 30, g: 160, b: 220 } } })
    .jpeg()
    .toBuffer()
  const up = await upload(alice, [{ name: 'beach.jpg', type: 'image/jpeg', data: photo }])
  t.equal(up.status, 201)
  const sendAs = (who: Person, body: Record<string, string>) =>
    appFetch(`${svc.url}/api/upload/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${who.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })

  const res = await sendAs(alice, { key: up.body.key, deviceId: dev.deviceId })
  t.equal(res.status, 200)
  const sent = (await res.json()) as {
    imageId: string
    deviceId: string
    image: { format: string; width: number; height: number; url: string }
  }
  t.match(sent, { deviceId: dev.deviceId, image: { format: 'png-gray4', width: 400, height: 300 } })

  const msg = (await arrived).payload
  t.equal(msg.imageId, sent.imageId, 'the device got the image over MQTT')
  t.match(msg, { format: 'png-gray4', width: 400, height: 300 })
  const file = await fetchBytes(msg.url)
  t.equal(file.status, 200, 'the device can fetch it')
  t.match(await sharp(file.body).metadata(), { format: 'png', width: 400, height: 300 })
  const { data } = await sharp(file.body).greyscale().raw().toBuffer({ resolveWithObject: true })
  t.ok(
    data.every((v) => v === 0 || v === 85 || v === 170 || v === 255),
    'only the four grey levels of the display',
  )

  t.equal(
    (await sendAs(bob, { key: up.body.key, deviceId: dev.deviceId })).status,
    404,
    "bob can neither use alice's upload nor see her device",
  )
  const bobUp = await upload(bob, [{ name: 'b.png', type: 'image/png', data: await image(10, 10).png().toBuffer() }])
  t.equal((await sendAs(bob, { key: bobUp.body.key, deviceId: dev.deviceId })).status, 404, "nor send his own to alice's device")
  t.equal((await sendAs(alice, { key: bobUp.body.key, deviceId: dev.deviceId })).status, 404, "alice cannot send bob's upload")
  await close(device)
})

t.test('the same uploads against an S3-compatible store (s3rver)', async (t) => {
  const { startS3 } = await import('../helpers/s3.js')
  const s3 = await startS3(t)
  const s3svc = await startApp(t, { env: { UPLOAD_MAX_BYTES: String(LIMIT), ...s3.env } })
  t.equal(s3svc.app.storage.kind, 's3')
  const carol = await signUp(makeClient(s3svc.url).client, uniqueEmail('s3-upload'))
  const auth = { authorization: `Bearer ${carol.token}` }

  const form = new FormData()
  const photo = await image(40, 20)
    .jpeg()
    .withExif({ IFD0: { Copyright: 's3-secret' } })
    .toBuffer()
  form.append('file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg')
  const res = await appFetch(`${s3svc.url}/api/upload`, { method: 'POST', headers: auth, body: form })
  t.equal(res.status, 201)
  const rec = (await res.json()) as Upload
  t.match(rec.key, uuidKey(carol.userId, 'jpg'))
  t.match(rec.url, new RegExp(`^${s3.endpoint}/${s3.bucket}/uploads/`), 'a presigned S3 GET, path-style')
  const fetched = Buffer.from(await (await appFetch(rec.url)).arrayBuffer())
  t.equal(fetched.length, rec.size, 'it serves what was stored')
  t.notOk(fetched.includes(Buffer.from('s3-secret')), 'without the metadata')

  const pre = await appFetch(`${s3svc.url}/api/upload/presign`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ contentType: 'image/jpeg', size: photo.length }),
  })
  t.equal(pre.status, 200)
  const p = (await pre.json()) as { key: string; url: string; method: string; headers: Record<string, string> }
  const signed = new URL(p.url)
  t.equal(signed.searchParams.get('X-Amz-SignedHeaders')?.split(';').includes('content-length'), true, 'the size is part of the signature')
  t.same(
    [...signed.searchParams.keys()].filter((k) => /checksum/i.test(k)),
    [],
    'no checksum parameters (any S3-compatible server accepts the URL)',
  )
  t.equal((await appFetch(p.url, { method: 'PUT', headers: p.headers, body: photo })).status, 200, 'the bytes go straight to the bucket')
  const done = await appFetch(`${s3svc.url}/api/upload/complete`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ key: p.key }),
  })
  t.equal(done.status, 201)
  const completed = (await done.json()) as Upload
  t.match(completed, { contentType: 'image/jpeg', width: 40, height: 20 })
  t.equal(await s3svc.app.storage.head(p.key), null, 'the raw upload is removed from the bucket')
})
