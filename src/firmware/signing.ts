// The firmware signing key: an Ed25519 key the service signs every release with. Devices get its
// public key with their credentials and in the retained config, and install only an image whose
// manifest (model, version, SHA-256 and size) carries a valid signature, so neither a changed
// image nor an old image offered under a new version installs. Plain node:crypto: the config
// loads the key, the firmware module signs, the simulator verifies.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto'

/** What is signed: one line per field, so no value can run into the next. */
export function manifestOf(r: { model: string; version: string; sha256: string; size: number }): Buffer {
  return Buffer.from(`dps-firmware-v1\n${r.model}\n${r.version}\n${r.sha256}\n${r.size}\n`, 'utf8')
}

/** A fresh key as PKCS#8 PEM (what FIRMWARE_SIGNING_KEY and DATA_DIR/firmware-signing-key hold). */
export function newSigningKeyPem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
}

/** Reads a PKCS#8 PEM Ed25519 private key; throws a message naming what is wrong. */
export function readSigningKey(pem: string): KeyObject {
  let key: KeyObject
  try {
    key = createPrivateKey({ key: pem.replace(/\\n/g, '\n'), format: 'pem' })
  } catch {
    throw new Error('not a PEM private key (-----BEGIN PRIVATE KEY----- …)')
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`an Ed25519 key is needed, this one is ${key.asymmetricKeyType}`)
  return key
}

/** The raw 32-byte public key, base64: the form devices are given. */
export function publicKeyOf(key: KeyObject): string {
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' })
  // An Ed25519 SPKI is a fixed 12-byte header followed by the 32-byte key.
  return spki.subarray(spki.length - 32).toString('base64')
}

export function signManifest(key: KeyObject, manifest: Buffer): string {
  return sign(null, manifest, key).toString('base64')
}

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

/** Checks an Ed25519 signature of `message` against a raw 32-byte public key. */
export function verifyEd25519(rawKey: Buffer, message: Buffer, signature: Buffer): boolean {
  try {
    if (rawKey.length !== 32 || signature.length !== 64) return false
    const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, rawKey]), format: 'der', type: 'spki' })
    return verify(null, message, key, signature)
  } catch {
    return false
  }
}

/** Checks a signature against the raw base64 public key, as a device would. */
export function verifyManifest(publicKey: string, manifest: Buffer, signature: string): boolean {
  return verifyEd25519(Buffer.from(publicKey, 'base64'), manifest, Buffer.from(signature, 'base64'))
}
