// The filesystem store: objects under DATA_DIR/objects, metadata beside each in a .meta.json
// file. Presigned URLs point at our own /files route and carry an HMAC over method, key and expiry.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { assertSafeKey, type ObjectMeta, type ObjectStore } from './store.js'

type Sidecar = { contentType: string; etag: string; cacheControl?: string }

function signFileUrl(secret: string, method: string, key: string, expires: number): string {
  return createHmac('sha256', secret).update(`${method}\n${key}\n${expires}`).digest('base64url')
}

export function verifyFileSignature(secret: string, method: string, key: string, expires: number, sig: string): boolean {
  if (!Number.isFinite(expires) || expires * 1000 < Date.now()) return false
  const want = Buffer.from(signFileUrl(secret, method, key, expires))
  const got = Buffer.from(sig)
  return want.length === got.length && timingSafeEqual(want, got)
}

export function createFsStore(opts: { dir: string; baseUrl: string; secret: string }): ObjectStore {
  const path = (key: string) => {
    assertSafeKey(key)
    return join(opts.dir, key)
  }
  const metaOf = async (key: string): Promise<ObjectMeta | null> => {
    try {
      const [st, side] = await Promise.all([stat(path(key)), readFile(`${path(key)}.meta.json`, 'utf8')])
      const s = JSON.parse(side) as Sidecar
      return { key, size: st.size, contentType: s.contentType, etag: s.etag, lastModified: st.mtime }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
  }
  return {
    kind: 'fs',
    async put(key, body, o) {
      const file = path(key)
      await mkdir(dirname(file), { recursive: true })
      const etag = `"${createHash('md5').update(body).digest('hex')}"`
      // Write then rename, so a reader never sees half an object.
      const tmp = `${file}.${process.pid}.${Date.now()}.tmp`
      await writeFile(tmp, body)
      await writeFile(
        `${file}.meta.json`,
        JSON.stringify({ contentType: o.contentType, etag, cacheControl: o.cacheControl } satisfies Sidecar),
      )
      await rename(tmp, file)
      return (await metaOf(key)) as ObjectMeta
    },
    async get(key) {
      const meta = await metaOf(key)
      if (!meta) return null
      return { meta, body: await readFile(path(key)) }
    },
    head: metaOf,
    async delete(key) {
      await rm(path(key), { force: true })
      await rm(`${path(key)}.meta.json`, { force: true })
    },
    async presign(key, o) {
      assertSafeKey(key)
      const expires = Math.floor(Date.now() / 1000) + o.expiresIn
      const sig = signFileUrl(opts.secret, o.method, key, expires)
      return `${opts.baseUrl}/files/${key}?expires=${expires}&sig=${sig}`
    },
    async close() {},
  }
}
