import { Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * Constant-time comparison of a presented secret with the configured one. Comparing digests
 * keeps the lengths equal, so neither the content nor the length of the secret leaks.
 */
/** Constant-time equality of two stored-format digests (hex), e.g. a presented secret's digest and the stored one. */
export const digestsEqual = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

export const secretMatches = (presented: string, expected: Redacted.Redacted<string>): boolean =>
  timingSafeEqual(digest(presented), digest(Redacted.value(expected)))
