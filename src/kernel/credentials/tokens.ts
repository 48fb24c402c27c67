/**
 * Credential formats. Every secret the service mints is `<fixed prefix><random base62 body>
 * <6-character base62 CRC-32 of prefix and body>`: the prefix says what it is (and lets
 * secret scanners find it), the checksum rejects typos and random strings before any
 * database look-up. Secrets are high-entropy, so they are stored as SHA-256 digests.
 */
import { hash, randomBytes } from "node:crypto"

export const CredentialPrefix = {
  apiKey: "svc_live_",
  userToken: "svc_user_",
  clientSecret: "svc_secret_",
  session: "svc_sess_",
  /** An internal service's `/rpc` credential (decision 0081). */
  rpcCredential: "svc_rpc_",
  /** Public, not a secret: the web tracker's snippet carries it (stored as is, not digested). */
  trackingKey: "svc_pub_"
} as const

export type CredentialPrefix = (typeof CredentialPrefix)[keyof typeof CredentialPrefix]

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const BODY_LENGTH = 32
const CHECKSUM_LENGTH = 6

/** Uniform random base62 characters (rejection sampling, no modulo bias). */
export const randomBase62 = (length: number): string => {
  let out = ""
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62]
      if (out.length === length) break
    }
  }
  return out
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

const crc32 = (text: string): number => {
  let crc = 0xffffffff
  for (const byte of Buffer.from(text, "utf8")) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const base62Fixed = (value: number, length: number): string => {
  let out = ""
  for (let i = 0; i < length; i++) {
    out = ALPHABET[value % 62] + out
    value = Math.floor(value / 62)
  }
  return out
}

/** A new secret with the given prefix. */
export const mintSecret = (prefix: CredentialPrefix): string => {
  const head = prefix + randomBase62(BODY_LENGTH)
  return head + base62Fixed(crc32(head), CHECKSUM_LENGTH)
}

/** Whether `value` has the shape and checksum of a secret minted with `prefix`. */
export const isWellFormed = (value: string, prefix: CredentialPrefix): boolean => {
  if (value.length !== prefix.length + BODY_LENGTH + CHECKSUM_LENGTH || !value.startsWith(prefix)) return false
  const head = value.slice(0, -CHECKSUM_LENGTH)
  if (!/^[0-9A-Za-z]+$/.test(value.slice(prefix.length))) return false
  return base62Fixed(crc32(head), CHECKSUM_LENGTH) === value.slice(-CHECKSUM_LENGTH)
}

/** What is stored: the SHA-256 digest, hex. */
/** SHA-256 hex of the UTF-8 secret; Node's one-shot `crypto.hash` (it runs on every authenticated request). */
export const secretDigest = (value: string): string => hash("sha256", value, "hex")

/** What a listing shows: the prefix and the first four characters of the body. */
export const displayPrefix = (value: string, prefix: CredentialPrefix): string => value.slice(0, prefix.length + 4)

/** A public client id for an OAuth app. */
export const mintClientId = (): string => `svc_app_${randomBase62(24)}`

/** A signing secret (HS256 wants at least 256 bits; 48 base62 characters carry ~285). */
export const mintSigningSecret = (): string => randomBase62(48)
