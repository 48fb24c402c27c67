/**
 * Deterministic extraction of customer identifiers from an inbound message's text (decision
 * 0079): email addresses and phone numbers with their country code, normalised as identity
 * resolution matches them. Only kinds a customer can hold are proposed.
 */
import { Result } from "effect"
import { normalizeEmail, normalizePhone } from "../../identity/normalize.ts"

export interface Extracted {
  readonly identifierType: "email" | "phone"
  readonly value: string
}

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g
// A `+` or `00` country prefix, then digits with the usual separators.
const PHONE = /(?:\+|\b00)\d[\d ().-]{5,18}\d/g

/** Identifiers in `text`, each once, in order of appearance. */
export const extractIdentifiers = (text: string): ReadonlyArray<Extracted> => {
  const seen = new Set<string>()
  const out: Array<Extracted> = []
  const add = (found: Extracted) => {
    const key = `${found.identifierType}:${found.value}`
    if (seen.has(key)) return
    seen.add(key)
    out.push(found)
  }
  for (const match of text.matchAll(EMAIL)) add({ identifierType: "email", value: normalizeEmail(match[0]) })
  for (const match of text.matchAll(PHONE)) {
    const phone = normalizePhone(match[0])
    if (Result.isSuccess(phone)) add({ identifierType: "phone", value: phone.success })
  }
  return out
}
