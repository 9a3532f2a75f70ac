import { join } from 'node:path'
import type { Config } from '../config.js'
import { createFsStore } from './fs-store.js'
import { createS3Store } from './s3-store.js'
import type { ObjectStore } from './store.js'

export function createObjectStore(config: Config): ObjectStore {
  if (config.s3) return createS3Store(config.s3)
  return createFsStore({ dir: join(config.dataDir, 'objects'), baseUrl: config.baseUrl, secret: config.authSecret })
}
