// Where files go: an S3 bucket or DATA_DIR/objects, and how large an upload may be.
import { z } from 'zod'
import { type Section, type Values, integer, optionalString, optionalUrl, variable } from './variables.js'

export const storage = {
  title: 'Object storage and uploads',
  variables: {
    s3: {
      bucket: variable('S3_BUCKET', optionalString, 'object storage in this S3 bucket; without it files go to `DATA_DIR/objects`'),
      endpoint: variable('S3_ENDPOINT', optionalUrl, 'any S3-compatible endpoint (MinIO, R2, …), path-style', { default: 'AWS' }),
      region: variable('S3_REGION', z.string().default('us-east-1'), "the bucket's region"),
      accessKeyId: variable('S3_ACCESS_KEY_ID', optionalString, 'S3 access key id', { default: "the SDK's default chain" }),
      secretAccessKey: variable('S3_SECRET_ACCESS_KEY', optionalString, 'S3 secret access key', { default: "the SDK's default chain" }),
    },
    uploads: {
      maxBytes: variable(
        'UPLOAD_MAX_BYTES',
        integer(1024, 1024 * 1024 * 1024, 10 * 1024 * 1024),
        'largest accepted upload in bytes (413 beyond)',
      ),
    },
  },
} satisfies Section

export function storageSettings({ s3: { bucket, ...s3 }, uploads }: Values<typeof storage.variables>) {
  return {
    s3: bucket
      ? { endpoint: s3.endpoint, bucket, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
      : undefined,
    uploads,
  }
}
