import { Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * Constant-time comparison of a presented secret with the configured one. Comparing digests
 * keeps the lengths equal, so neither the content nor the length of the secret leaks.
 */
export const secretMatches = (presented: string, expected: Redacted.Redacted<string>): boolean =>
  timingSafeEqual(digest(presented), digest(Redacted.value(expected)))
