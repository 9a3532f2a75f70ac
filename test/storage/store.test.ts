// One suite for both object stores, through the app's own app.storage: the filesystem store
// (presigned links served by /files) and S3 through s3rver on loopback (presigned links signed
// with SigV4 and answered by s3rver). Upload, fetch, head, delete, presigned GET and PUT.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { startS3 } from '../helpers/s3.js'
import type { ObjectStore } from '../../src/storage/store.js'
import { appFetch } from '../helpers/app-fetch.js'

type Tap = Pick<typeof t, 'test'>

/** `checksSignatures`: s3rver accepts presigned URLs without verifying them, so those checks run against the filesystem store only. */
function storeSuite(t: Tap, svc: () => TestApp, checksSignatures: boolean) {
  const store = (): ObjectStore => svc().app.storage
  const prefix = `suite/${randomBytes(4).toString('hex')}`

  t.test('put, head and get return the same bytes and metadata', async (t) => {
    // Binary and larger than one chunk, so any framing left in the object would show.
    const body = randomBytes(300 * 1024)
    const key = `${prefix}/blob.bin`
    const put = await store().put(key, body, { contentType: 'application/octet-stream' })
    t.equal(put.key, key)
    t.equal(put.size, body.length)
    t.match(put.etag, /^"[0-9a-f]{32}"$/, 'an MD5 ETag, as S3 gives for a single-part upload')
    const head = await store().head(key)
    t.equal(head?.size, body.length)
    t.equal(head?.contentType, 'application/octet-stream')
    t.equal(head?.etag, put.etag)
    const got = await store().get(key)
    t.ok(got?.body.equals(body), 'the stored bytes are exactly the uploaded ones')
    t.equal(got?.meta.size, body.length)

    const png = Buffer.from('89504e470d0a1a0a', 'hex')
    await store().put(key, png, { contentType: 'image/png' })
    const replaced = await store().get(key)
    t.ok(replaced?.body.equals(png), 'a put replaces the object')
    t.equal(replaced?.meta.contentType, 'image/png')
  })

  t.test('a presigned GET fetches the object without other credentials', async (t) => {
    const key = `${prefix}/photo.png`
    const body = randomBytes(2048)
    await store().put(key, body, { contentType: 'image/png' })
    const url = await store().presign(key, { method: 'GET', expiresIn: 60 })
    const res = await appFetch(url)
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'image/png')
    t.ok(Buffer.from(await res.arrayBuffer()).equals(body), 'the same bytes')

    if (!checksSignatures) return
    const u = new URL(url)
    const sigParam = u.searchParams.has('sig') ? 'sig' : 'X-Amz-Signature'
    const sig = u.searchParams.get(sigParam)!
    u.searchParams.set(sigParam, (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1))
    t.equal((await appFetch(u)).status, 403, 'a tampered signature is refused')
    const other = new URL(url)
    other.pathname = other.pathname.replace('photo.png', 'other.png')
    t.equal((await appFetch(other)).status, 403, 'a signature is for one key only')
  })

  t.test('a presigned PUT uploads directly', async (t) => {
    const key = `${prefix}/direct.webp`
    const body = randomBytes(10_000)
    const url = await store().presign(key, { method: 'PUT', expiresIn: 60, contentType: 'image/webp' })
    const res = await appFetch(url, { method: 'PUT', headers: { 'content-type': 'image/webp' }, body })
    t.equal(res.status, 200)
    t.ok(res.headers.get('etag'), 'answers with the ETag')
    const got = await store().get(key)
    t.ok(got?.body.equals(body), 'stored exactly')
    t.equal(got?.meta.contentType, 'image/webp')

    if (!checksSignatures) return
    const getUrl = await store().presign(key, { method: 'GET', expiresIn: 60 })
    t.equal(
      (await appFetch(getUrl, { method: 'PUT', headers: { 'content-type': 'image/webp' }, body: randomBytes(10) })).status,
      403,
      'a GET link cannot upload',
    )
    t.ok((await store().get(key))?.body.equals(body), 'the object is unchanged')
  })

  t.test('delete removes the object; missing objects read as null', async (t) => {
    const key = `${prefix}/gone.txt`
    await store().put(key, Buffer.from('bye'), { contentType: 'text/plain' })
    const url = await store().presign(key, { method: 'GET', expiresIn: 60 })
    await store().delete(key)
    t.equal(await store().get(key), null)
    t.equal(await store().head(key), null)
    t.equal((await appFetch(url)).status, 404, 'its link now answers 404')
    await store().delete(key)
    t.pass('deleting a missing object is not an error')
  })

  t.test('unsafe keys are refused before any I/O', async (t) => {
    for (const key of ['../escape', 'a/../../b', '/abs', 'a//b', 'a\\b', '']) {
      await t.rejects(store().put(key, Buffer.from('x'), { contentType: 'text/plain' }), /unsafe object key/, JSON.stringify(key))
    }
  })
}

t.test('filesystem store (DATA_DIR/objects, links served by /files)', async (t) => {
  let svc!: TestApp
  t.before(async () => {
    svc = await startApp(t)
  })
  t.test('is the default', async (t) => t.equal(svc.app.storage.kind, 'fs'))
  storeSuite(t, () => svc, true)

  t.test('its links: expiry, and only the signed method', async (t) => {
    const key = 'suite/expiring.png'
    await svc.app.storage.put(key, Buffer.from('img'), { contentType: 'image/png' })
    const url = new URL(await svc.app.storage.presign(key, { method: 'GET', expiresIn: 60 }))
    const expired = new URL(url)
    expired.searchParams.set('expires', String(Math.floor(Date.now() / 1000) - 1))
    const res = await appFetch(expired)
    t.equal(res.status, 403)
    t.match(await res.json(), { code: 'URL_EXPIRED' })
    const bare = new URL(url)
    bare.search = ''
    t.equal((await appFetch(bare)).status, 400, 'no signature at all is a bad request')
    const ok = await appFetch(url)
    t.equal(ok.headers.get('x-content-type-options'), 'nosniff')
    t.match(ok.headers.get('cache-control'), /^private, max-age=\d+$/)
    const etag = ok.headers.get('etag')!
    t.equal((await appFetch(url, { headers: { 'if-none-match': etag } })).status, 304, 'revalidation by ETag')
  })
})

t.test('S3 store (s3rver on loopback, configured by S3_*)', async (t) => {
  let svc!: TestApp
  t.before(async () => {
    const s3 = await startS3(t)
    svc = await startApp(t, { env: s3.env })
  })
  t.test('is chosen by S3_BUCKET', async (t) => t.equal(svc.app.storage.kind, 's3'))
  storeSuite(t, () => svc, false)

  t.test('the app serves no /files route in S3 mode', async (t) => {
    t.equal((await appFetch(`${svc.url}/files/x?expires=1&sig=x`)).status, 404)
  })
})
