/**
 * Standard Webhooks signing (https://www.standardwebhooks.com, decision 0078): `whsec_` + base64
 * key; `webhook-signature` is `v1,` + base64 HMAC-SHA256 of `${webhook-id}.${webhook-timestamp}.${body}`
 * under the decoded key, one per live secret, space-separated.
 */
import { createHmac, createSecretKey, type KeyObject, randomBytes } from "node:crypto"

export const SECRET_PREFIX = "whsec_"

/** A new secret: 24 random bytes. */
export const newSecret = (): string => `${SECRET_PREFIX}${randomBytes(24).toString("base64")}`

// Decoded keys by secret: building the key for each signature was a tenth of the delivery worker's
// CPU. Bounded: emptied when full (secrets of live subscriptions, a few per subscription).
const keys = new Map<string, KeyObject>()
const MAX_KEYS = 10_000

const keyOf = (secret: string): KeyObject => {
  const known = keys.get(secret)
  if (known !== undefined) return known
  if (keys.size >= MAX_KEYS) keys.clear()
  const key = createSecretKey(Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64"))
  keys.set(secret, key)
  return key
}

export const signatureOf = (secret: string, id: string, timestamp: number, body: string): string =>
  `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64")}`

/** The three headers of one attempt, signed with every secret given (current first). */
export const signedHeaders = (secrets: ReadonlyArray<string>, id: string, timestamp: number, body: string) => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestamp),
  "webhook-signature": secrets.map((secret) => signatureOf(secret, id, timestamp, body)).join(" ")
})
