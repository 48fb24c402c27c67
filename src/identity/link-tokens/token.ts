/**
 * Customer link tokens (decision 0037), pure: minted by `POST /api/v1/customers/link-tokens`,
 * verified by the tracker's collector. Stateless and opaque:
 *
 *   `lt1_` + base64url( expires (uint32, unix seconds) | iv (16) | AES-256-CTR(profile id | customer id) (32) | tag (16) )
 *
 * The tag is HMAC-SHA256 over the prefix and the bytes before it (encrypt-then-MAC), truncated to
 * 128 bits. The profile and customer ids are encrypted: a holder of the token learns nothing but
 * its expiry. Both keys are derived from `SVC_LINK_TOKEN_SECRET` with HKDF.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto"

/** The landing URL's query parameter the tracker reads the token from. */
export const LINK_TOKEN_PARAM = "svc_lt"

const PREFIX = "lt1_"
const EXPIRES_BYTES = 4
const IV_BYTES = 16
const BODY_BYTES = 32
const TAG_BYTES = 16
const TOKEN_BYTES = EXPIRES_BYTES + IV_BYTES + BODY_BYTES + TAG_BYTES

/** What a token string looks like, before any cryptography (also what the tracker forwards). */
export const LINK_TOKEN_SHAPE = /^lt1_[A-Za-z0-9_-]{91}$/

export interface LinkTokenKeys {
  readonly encryption: Buffer
  readonly mac: Buffer
}

export const deriveLinkTokenKeys = (secret: string): LinkTokenKeys => ({
  encryption: Buffer.from(hkdfSync("sha256", secret, "svc", "link-token/v1/encryption", 32)),
  mac: Buffer.from(hkdfSync("sha256", secret, "svc", "link-token/v1/mac", 32))
})

export interface LinkTokenClaims {
  readonly profileId: string
  readonly customerId: string
  /** Unix seconds. */
  readonly expiresAt: number
}

const uuidBytes = (uuid: string) => Buffer.from(uuid.replaceAll("-", ""), "hex")

const uuidOf = (bytes: Buffer) => {
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

const tagOf = (keys: LinkTokenKeys, signed: Buffer) =>
  createHmac("sha256", keys.mac).update(PREFIX).update(signed).digest().subarray(0, TAG_BYTES)

export const mintLinkToken = (keys: LinkTokenKeys, claims: LinkTokenClaims): string => {
  const expires = Buffer.alloc(EXPIRES_BYTES)
  expires.writeUInt32BE(claims.expiresAt)
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-ctr", keys.encryption, iv)
  const body = Buffer.concat([cipher.update(Buffer.concat([uuidBytes(claims.profileId), uuidBytes(claims.customerId)])), cipher.final()])
  const signed = Buffer.concat([expires, iv, body])
  return PREFIX + Buffer.concat([signed, tagOf(keys, signed)]).toString("base64url")
}

export type LinkTokenVerdict =
  | { readonly valid: true; readonly claims: LinkTokenClaims }
  | { readonly valid: false; readonly problem: "malformed" | "bad_signature" | "expired" }

/** The token's claims when it is well-formed, signed with these keys and not expired at `nowSeconds`. */
export const verifyLinkToken = (keys: LinkTokenKeys, token: string, nowSeconds: number): LinkTokenVerdict => {
  if (!LINK_TOKEN_SHAPE.test(token)) return { valid: false, problem: "malformed" }
  const bytes = Buffer.from(token.slice(PREFIX.length), "base64url")
  if (bytes.length !== TOKEN_BYTES) return { valid: false, problem: "malformed" }
  const signed = bytes.subarray(0, TOKEN_BYTES - TAG_BYTES)
  if (!timingSafeEqual(tagOf(keys, signed), bytes.subarray(TOKEN_BYTES - TAG_BYTES))) {
    return { valid: false, problem: "bad_signature" }
  }
  const expiresAt = signed.readUInt32BE(0)
  if (expiresAt <= nowSeconds) return { valid: false, problem: "expired" }
  const iv = signed.subarray(EXPIRES_BYTES, EXPIRES_BYTES + IV_BYTES)
  const decipher = createDecipheriv("aes-256-ctr", keys.encryption, iv)
  const body = Buffer.concat([decipher.update(signed.subarray(EXPIRES_BYTES + IV_BYTES)), decipher.final()])
  return {
    valid: true,
    claims: { profileId: uuidOf(body.subarray(0, 16)), customerId: uuidOf(body.subarray(16, 32)), expiresAt }
  }
}
