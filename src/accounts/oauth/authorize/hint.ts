/**
 * `id_token_hint` of `/oauth/authorize` (decision 0022): a JWT the partner signs with its
 * app's jwt secret to say who the person is. Verified with jose: HS256 only, key = the UTF-8
 * bytes of the jwt secret as shown at app creation or rotation, `iss` = the client id, `exp`
 * required (60 seconds of clock tolerance), `sub` a non-empty string. `email` and
 * `external_ref` are returned as sent; the caller checks them for its resolution mode.
 */
import { Effect } from "effect"
import { errors, jwtVerify } from "jose"
import { AuthorizeRedirectError } from "../../../../schema/oauth.ts"

export const HINT_ALGORITHM = "HS256"
export const HINT_CLOCK_TOLERANCE_SECONDS = 60
/** A hint longer than this is refused before any work. */
export const MAX_HINT_LENGTH = 8192

export interface VerifiedHint {
  readonly subject: string
  /** The `email` claim when it is a string. */
  readonly email: string | undefined
  /** The `external_ref` claim as sent (any JSON type, or undefined). */
  readonly externalRef: unknown
  /** The optional `name` claim when it is a non-blank string (names a workspace created at consent). */
  readonly name: string | undefined
}

const invalidHint = (description: string) => new AuthorizeRedirectError({ error: "invalid_request", error_description: description })

/** What jose threw, as a description safe for `error_description` (RFC 6749: printable ASCII, no `"` or `\`). */
const describe = (error: unknown): string => {
  if (error instanceof errors.JWTExpired) return "id_token_hint has expired."
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case "iss":
        return "id_token_hint iss must be the client_id."
      case "exp":
        return error.reason === "missing" ? "id_token_hint must carry exp." : "id_token_hint exp is invalid."
      case "sub":
        return "id_token_hint must carry sub."
      case "nbf":
        return "id_token_hint is not valid yet."
      default:
        return "id_token_hint claims are invalid."
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return "id_token_hint must be signed with HS256."
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return "id_token_hint signature does not verify with this app's jwt secret."
  }
  return "id_token_hint is not a well-formed signed JWT."
}

const encoder = new TextEncoder()

export const verifyHint = (
  token: string,
  jwtSecret: string,
  clientId: string,
  nowMillis: number
): Effect.Effect<VerifiedHint, AuthorizeRedirectError> =>
  Effect.gen(function*() {
    if (token.length > MAX_HINT_LENGTH) return yield* invalidHint("id_token_hint is too long.")
    const { payload } = yield* Effect.tryPromise({
      try: () =>
        jwtVerify(token, encoder.encode(jwtSecret), {
          algorithms: [HINT_ALGORITHM],
          issuer: clientId,
          requiredClaims: ["exp", "sub"],
          clockTolerance: HINT_CLOCK_TOLERANCE_SECONDS,
          currentDate: new Date(nowMillis)
        }),
      catch: (error) => invalidHint(describe(error))
    })
    if (typeof payload.sub !== "string" || payload.sub.trim() === "") return yield* invalidHint("id_token_hint must carry sub.")
    const name = payload["name"]
    return {
      subject: payload.sub,
      email: typeof payload["email"] === "string" ? payload["email"] : undefined,
      externalRef: payload["external_ref"],
      name: typeof name === "string" && name.trim() !== "" ? name.trim().slice(0, 200) : undefined
    } satisfies VerifiedHint
  })
