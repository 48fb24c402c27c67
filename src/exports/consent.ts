/**
 * The consent contract (api-concepts.md "Consent contract"), shared by ad-set rebuilds (decision
 * 0090) and customer lists (decision 0100): `{version, text_hash, accepted_by, accepted_at}`.
 */
import { Effect, Option, Schema } from "effect"
import { ConsentRequired, unprocessable, type ValidationError } from "../../schema/errors.ts"

const CONSENT_MAX_AGE_MS = 24 * 60 * 60 * 1000
const CONSENT_MAX_AHEAD_MS = 5 * 60 * 1000
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

const ConsentShape = Schema.Struct({
  version: Schema.String.check(Schema.isMinLength(1)),
  text_hash: Schema.String.check(Schema.isMinLength(1)),
  accepted_by: Schema.String.check(Schema.isMinLength(1)),
  accepted_at: Schema.String.check(Schema.isMinLength(1))
})

/** A version and the SHA-256 of its text per locale, as a 409 `consent_required` carries it. */
export interface ConsentHint<V extends string = string> {
  readonly version: V
  readonly text_hashes: Readonly<Record<string, string>>
}

export interface ConsentTerms<V extends string> {
  /** The hint of every version accepted. */
  readonly versions: ReadonlyArray<ConsentHint<V>>
  /** The hint a 409 carries when the consent is missing or names no accepted version. */
  readonly fallback: ConsentHint<V>
  readonly messages: {
    readonly missing: string
    readonly unknownVersion: string
    readonly unknownHash: string
    readonly tooOld: string
  }
}

/**
 * Malformed (not four non-empty strings, `accepted_at` not an ISO 8601 time, or more than 5
 * minutes ahead) is 422; missing, an unknown version, another hash or older than 24 hours is 409
 * `consent_required` with the hint of the version named (the fallback's when none is). Answers
 * the version accepted.
 */
export const checkConsentContract = <V extends string>(
  consent: unknown,
  nowMs: number,
  terms: ConsentTerms<V>
): Effect.Effect<V, ConsentRequired | ValidationError> => {
  const required = (message: string, hint: ConsentHint<V> = terms.fallback) =>
    Effect.fail(new ConsentRequired({ message, consent: hint }))
  if (consent === undefined || consent === null) return required(terms.messages.missing)
  const decoded = Schema.decodeUnknownOption(ConsentShape)(consent)
  if (Option.isNone(decoded)) {
    return Effect.fail(unprocessable("body.consent: {version, text_hash, accepted_by, accepted_at}, four non-empty strings", { reason: "consent_malformed" }))
  }
  const c = decoded.value
  const at = Date.parse(c.accepted_at)
  if (!ISO_TIME.test(c.accepted_at) || Number.isNaN(at)) {
    return Effect.fail(unprocessable("body.consent.accepted_at: an ISO 8601 time", { reason: "consent_malformed" }))
  }
  if (at - nowMs > CONSENT_MAX_AHEAD_MS) {
    return Effect.fail(unprocessable("body.consent.accepted_at: at most 5 minutes in the future", { reason: "consent_in_future" }))
  }
  const hint = terms.versions.find((v) => v.version === c.version)
  if (hint === undefined) return required(terms.messages.unknownVersion)
  if (!Object.values(hint.text_hashes).includes(c.text_hash)) return required(terms.messages.unknownHash, hint)
  if (nowMs - at > CONSENT_MAX_AGE_MS) return required(terms.messages.tooOld, hint)
  return Effect.succeed(hint.version)
}
