/**
 * Standard Webhooks signing (https://www.standardwebhooks.com, decision 0078): `whsec_` + base64
 * key; `webhook-signature` is `v1,` + base64 HMAC-SHA256 of `${webhook-id}.${webhook-timestamp}.${body}`
 * under the decoded key, one per live secret, space-separated.
 */
import { createHmac, randomBytes } from "node:crypto"

export const SECRET_PREFIX = "whsec_"

/** A new secret: 24 random bytes. */
export const newSecret = (): string => `${SECRET_PREFIX}${randomBytes(24).toString("base64")}`

export const signatureOf = (secret: string, id: string, timestamp: number, body: string): string => {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64")
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64")}`
}

/** The three headers of one attempt, signed with every secret given (current first). */
export const signedHeaders = (secrets: ReadonlyArray<string>, id: string, timestamp: number, body: string) => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestamp),
  "webhook-signature": secrets.map((secret) => signatureOf(secret, id, timestamp, body)).join(" ")
})
