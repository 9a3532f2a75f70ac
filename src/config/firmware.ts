// Firmware releases: the key they are signed with, and the images' size and download links.
import { join } from 'node:path'
import { z } from 'zod'
import { newSigningKeyPem, publicKeyOf, readSigningKey } from '../firmware/signing.js'
import type { Keeper } from './data-dir.js'
import { invalid } from './error.js'
import { type Section, type Values, integer, variable } from './variables.js'

export const firmware = {
  title: 'Firmware',
  intro: 'See [firmware.md](firmware.md).',
  variables: {
    firmware: {
      signingKey: variable(
        'FIRMWARE_SIGNING_KEY',
        z.string().optional(),
        'Ed25519 private key (PKCS#8 PEM, `\\n` allowed for newlines) releases are signed with; devices trust its public half for good, so keep it with your backups; every node of a cluster needs the same one',
        { default: 'generated into `DATA_DIR/firmware-signing-key`' },
      ),
      maxBytes: variable(
        'FIRMWARE_MAX_BYTES',
        integer(1024, 256 * 1024 * 1024, 32 * 1024 * 1024),
        'largest firmware image an admin may upload (bytes)',
      ),
      urlSeconds: variable(
        'FIRMWARE_URL_SECONDS',
        integer(60, 7 * 86_400, 3600),
        'how long the download link in a firmware offer stays valid (a device renews it with its secret)',
      ),
    },
  },
} satisfies Section

/**
 * The key releases are signed with: FIRMWARE_SIGNING_KEY (PKCS#8 PEM) or, when unset, one
 * generated once into DATA_DIR/firmware-signing-key. Devices trust its public key for good, so
 * losing it means re-pairing every device: back it up with the data folder.
 */
export function firmwareSettings(
  { firmware: { signingKey, ...fields } }: Values<typeof firmware.variables>,
  dataDir: string,
  keep: Keeper,
) {
  const configured = signingKey?.trim()
  const pem = configured || keep('firmware-signing-key', () => newSigningKeyPem().trim())
  let key: ReturnType<typeof readSigningKey>
  try {
    key = readSigningKey(pem)
  } catch (err) {
    throw invalid([`${configured ? 'FIRMWARE_SIGNING_KEY' : join(dataDir, 'firmware-signing-key')}: ${(err as Error).message}`])
  }
  return {
    firmware: {
      signingKey: key,
      /** Raw Ed25519 public key, base64: given to devices. */
      publicKey: publicKeyOf(key),
      /** Largest firmware image accepted. */
      maxBytes: fields.maxBytes,
      /** How long a download link in an offer stays valid. */
      urlSeconds: fields.urlSeconds,
    },
  }
}
