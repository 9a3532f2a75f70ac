import { join } from 'node:path'
import type { Config } from '../config.js'
import { createFsStore } from './fs-store.js'
import type { ObjectStore } from './store.js'

/** The AWS SDK is loaded only when S3 is configured: it is a large share of start-up otherwise. */
export async function createObjectStore(config: Config): Promise<ObjectStore> {
  if (config.s3) return (await import('./s3-store.js')).createS3Store(config.s3)
  return createFsStore({ dir: join(config.dataDir, 'objects'), baseUrl: config.baseUrl, secret: config.authSecret })
}
