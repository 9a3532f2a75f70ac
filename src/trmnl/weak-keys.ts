// Ed25519 public keys a device must never bind: points of small order (the identity, the point of
// order 2, the two of order 4 and the four of order 8), against which a forged signature verifies
// for every message (or none does), and non-canonical encodings (a y coordinate not reduced
// modulo p). libsodium refuses both (crypto_sign_verify_detached: ge25519_has_small_order,
// ge25519_is_canonical); OpenSSL, which node:crypto verifies with, does not.

const P = (1n << 255n) - 19n

/** The y coordinates of the points of order 8 (the other small-order points have y 0, 1 or p − 1). */
const ORDER_8_Y = (() => {
  const le = Buffer.from('26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', 'hex')
  const y = littleEndian(le)
  return [y, P - y]
})()

function littleEndian(bytes: Uint8Array): bigint {
  let n = 0n
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]!)
  return n
}

/** True for a 32-byte key of small order or not canonically encoded (and for anything not 32 bytes). */
export function isWeakEd25519Key(key: Uint8Array): boolean {
  if (key.length !== 32) return true
  // The top bit is the sign of x; the rest is y, which must be below p.
  const y = littleEndian(key) & ((1n << 255n) - 1n)
  if (y >= P) return true
  return y === 0n || y === 1n || y === P - 1n || ORDER_8_Y.includes(y)
}
