// s3rver on loopback: a local server speaking the S3 REST protocol, with one bucket, and the key
// pair it expects (S3RVER / S3RVER). It proves the protocol path, not authentication: it does not
// check presigned URLs' signatures (store.test.ts checks those on the filesystem store).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import S3rver from 's3rver'

type Tap = { teardown(fn: () => unknown): void }

export type LocalS3 = { endpoint: string; bucket: string; env: Record<string, string> }

export async function startS3(t: Tap, bucket = 'dps-test'): Promise<LocalS3> {
  const directory = await mkdtemp(join(tmpdir(), 'dps-s3-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] })
  const { port } = (await server.run()) as { port: number }
  t.teardown(async () => {
    await server.close()
    await rm(directory, { recursive: true, force: true })
  })
  const endpoint = `http://127.0.0.1:${port}`
  return {
    endpoint,
    bucket,
    env: { S3_ENDPOINT: endpoint, S3_BUCKET: bucket, S3_REGION: 'us-east-1', S3_ACCESS_KEY_ID: 'S3RVER', S3_SECRET_ACCESS_KEY: 'S3RVER' },
  }
}
