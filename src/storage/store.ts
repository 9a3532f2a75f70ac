// Object storage behind one interface: the filesystem under DATA_DIR/objects by default, any
// S3-compatible store when S3_* is configured.
export type ObjectMeta = { key: string; size: number; contentType: string; etag: string; lastModified: Date }
type PutOptions = { contentType: string; cacheControl?: string }
/** `contentLength` on a PUT: the only body size the URL accepts (S3 signs it; the filesystem route caps at UPLOAD_MAX_BYTES). */
type PresignOptions = { method: 'GET' | 'PUT'; expiresIn: number; contentType?: string; contentLength?: number }

export type ObjectStore = {
  kind: 'fs' | 's3'
  put(key: string, body: Buffer, opts: PutOptions): Promise<ObjectMeta>
  get(key: string): Promise<{ meta: ObjectMeta; body: Buffer } | null>
  head(key: string): Promise<ObjectMeta | null>
  delete(key: string): Promise<void>
  /** A time-limited URL for a direct GET or PUT by a client. */
  presign(key: string, opts: PresignOptions): Promise<string>
  close(): Promise<void>
}

/** Keys are relative paths of safe segments: no '..', no leading '/', no backslashes or control characters. */
export function assertSafeKey(key: string): void {
  const ok =
    key.length > 0 &&
    key.length <= 512 &&
    !key.startsWith('/') &&
    key.split('/').every((seg) => seg.length > 0 && seg !== '.' && seg !== '..' && /^[A-Za-z0-9._=-]+$/.test(seg))
  if (!ok) throw new Error(`unsafe object key: ${JSON.stringify(key)}`)
}
