/**
 * `properties.subject_ref`: an opaque id of who a payment is for, never personal data
 * (decision 0029). Accepted: a canonical UUID (8-4-4-4-12 hex) or a token of at most 32
 * letters, digits, `_` and `-`. What looks like an email address, a phone number or a
 * national id is refused as personal data (400 `invalid_parameter`) before the shape is
 * checked, so a sender learns why; anything else malformed is 400 `validation_error`.
 */

export type SubjectRefVerdict =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly personalData: true; readonly looksLike: string }
  | { readonly ok: false; readonly personalData: false; readonly message: string }

const CANONICAL_UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/
const TOKEN = /^[A-Za-z0-9_-]{1,32}$/

const EMAIL = /[^\s@]+@[^\s@]+/
/** Digits with the usual phone punctuation, 7 to 15 digits (E.164 allows 15). */
const PHONE_CHARS = /^\+?[\d\s().\-/]+$/
/** US SSN (123-45-6789, also without dashes: covered by the digit rule). */
const SSN = /^\d{3}-\d{2}-\d{4}$/
/** ES DNI / NIE (12345678Z, X1234567L), BR CPF (123.456.789-09), CL RUT (12.345.678-5 / -K), UK NINO (QQ123456C). */
const NATIONAL_IDS = [
  /^\d{8}-?[A-Za-z]$/,
  /^[XYZxyz]-?\d{7}-?[A-Za-z]$/,
  /^\d{3}\.?\d{3}\.?\d{3}-?\d{2}$/,
  /^\d{1,2}\.?\d{3}\.?\d{3}-?[\dkK]$/,
  /^[A-Za-z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-Da-d]$/
]

const digitCount = (value: string) => value.replace(/\D/g, "").length

/** Whether `value` (one token, trimmed) has the shape of a national id above (also used by declared-source, decision 0033). */
export const looksLikeNationalId = (value: string): boolean => {
  const trimmed = value.trim()
  return SSN.test(trimmed) || NATIONAL_IDS.some((pattern) => pattern.test(trimmed))
}

/** What personal data `value` looks like, if any. */
export const looksLikePersonalData = (value: string): string | undefined => {
  const trimmed = value.trim()
  if (EMAIL.test(trimmed)) return "an email address"
  if (looksLikeNationalId(trimmed)) return "a national id"
  if (PHONE_CHARS.test(trimmed) && digitCount(trimmed) >= 7 && digitCount(trimmed) <= 15) return "a phone number"
  // A long run of digits inside a token (e.g. "cust-34600111222") is a phone or an id number too.
  if (/\d{9,}/.test(trimmed)) return "a phone number or national id"
  return undefined
}

export const checkSubjectRef = (value: string): SubjectRefVerdict => {
  // A canonical UUID is opaque by construction, even when all its groups are digits.
  if (CANONICAL_UUID.test(value)) return { ok: true, value: value.toLowerCase() }
  const looksLike = looksLikePersonalData(value)
  if (looksLike !== undefined) return { ok: false, personalData: true, looksLike }
  if (TOKEN.test(value)) return { ok: true, value }
  return {
    ok: false,
    personalData: false,
    message: "Expected a canonical UUID or a token of at most 32 letters, digits, _ and -"
  }
}
