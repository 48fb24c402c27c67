/**
 * PKCE (RFC 7636) as RFC 9700 section 2.1.1 and OAuth 2.1 ask, for both authorization-code
 * flows: the partner flow (`/oauth/authorize`, `/oauth/token`, where PKCE is optional because
 * every partner app is a confidential client) and the agent flow (`/oauth/mcp/*`, where every
 * client is public and PKCE is required). Decision 0106.
 *
 * Only `S256`: `plain`, any other method and a challenge without a method (RFC 7636 reads a
 * missing method as `plain`) are refused. The checks are pure; each flow answers a refusal in
 * its own error shape (`invalid_request` by redirect at authorization, `invalid_grant` at the
 * token endpoint).
 */
import { Result } from "effect"
import { createHash } from "node:crypto"
import { digestsEqual } from "../../platform/secrets.ts"

/** The methods served, as published in authorization server metadata. */
export const CODE_CHALLENGE_METHODS = ["S256"] as const

/** An S256 challenge: BASE64URL of a SHA-256 digest without padding, so exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/
/** RFC 7636 section 4.1: 43 to 128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

/** BASE64URL(SHA-256(ASCII(verifier))) (RFC 7636 section 4.2). */
export const s256 = (verifier: string): string => createHash("sha256").update(verifier, "ascii").digest("base64url")

/**
 * The authorization request's `code_challenge` and `code_challenge_method` from a client that
 * may omit PKCE (a confidential client): the challenge to store with the code, null when PKCE
 * is not used, or why the request is `invalid_request`.
 */
export const optionalChallenge = (
  challenge: string | undefined,
  method: string | undefined
): Result.Result<string | null, string> => {
  if (challenge === undefined) {
    return method === undefined ? Result.succeed(null) : Result.fail("code_challenge_method was sent without code_challenge.")
  }
  if (method !== "S256") return Result.fail("code_challenge_method must be S256; plain is not accepted.")
  if (!S256_CHALLENGE.test(challenge)) {
    return Result.fail("code_challenge must be the 43-character BASE64URL SHA-256 of the verifier.")
  }
  return Result.succeed(challenge)
}

/** The same for a public client, which must use PKCE (RFC 9700 section 2.1.1). */
export const requiredChallenge = (
  challenge: string | undefined,
  method: string | undefined
): Result.Result<string, string> =>
  Result.flatMap(optionalChallenge(challenge, method), (found) =>
    found === null
      ? Result.fail("PKCE is required: send code_challenge with code_challenge_method=S256.")
      : Result.succeed(found))

export const MALFORMED_VERIFIER = "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)."

/**
 * The token request's `code_verifier` before any code is looked up or spent: why the request is
 * `invalid_request` when one was sent without RFC 7636's shape (it could match no challenge), else
 * undefined. A missing verifier is not malformed: it is the grant's refusal (`verifierRefusal`,
 * `invalid_grant`, the code spent), the same on both flows (decision 0106).
 */
export const malformedVerifier = (verifier: string | undefined): string | undefined =>
  verifier !== undefined && !CODE_VERIFIER.test(verifier) ? MALFORMED_VERIFIER : undefined

/**
 * The token request's `code_verifier` against the challenge stored with the code: undefined when
 * they agree, else why the grant is `invalid_grant`. A code issued with a challenge needs the
 * matching verifier (RFC 7636 section 4.6); a verifier for a code issued without one is refused
 * too, so a PKCE request cannot be downgraded by a code injected from a flow without it
 * (RFC 9700 section 2.1.1, OAuth 2.1 section 4.1.3).
 */
export const verifierRefusal = (challenge: string | null, verifier: string | undefined): string | undefined => {
  if (challenge === null) {
    return verifier === undefined ? undefined : "code_verifier was sent for a code issued without code_challenge."
  }
  if (verifier === undefined) return "code_verifier is required: the code was issued with a code_challenge."
  // Both sides are 43 characters when the verifier is well formed; the compare takes the same time for any mismatch.
  return digestsEqual(s256(verifier), challenge) ? undefined : "The code_verifier does not match the code_challenge."
}
