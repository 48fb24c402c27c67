/**
 * Identifier normalisation (decision 0040): what identity resolution matches on. Emails are
 * trimmed and lower-cased; phones become E.164 with a maintained phone library
 * (libphonenumber-js), so "+34 600 111 222", "+34600111222" and "0034 600-111-222" are one phone.
 */
import { parsePhoneNumberFromString } from "libphonenumber-js"
import { Result } from "effect"

export const normalizeEmail = (raw: string): string => raw.trim().toLowerCase()

/**
 * A phone in E.164 (`+34600111222`), or why not. The number must carry its country code (`+`
 * or `00`); a number the library deems impossible for its country is refused.
 */
export const normalizePhone = (raw: string): Result.Result<string, string> => {
  const trimmed = raw.trim()
  const international = trimmed.startsWith("00") ? `+${trimmed.slice(2)}` : trimmed
  const parsed = parsePhoneNumberFromString(international)
  if (parsed === undefined || !international.startsWith("+")) {
    return Result.fail("Expected a phone number with its country code, such as +34 600 111 222")
  }
  if (!parsed.isPossible()) return Result.fail("Not a possible phone number for its country code")
  return Result.succeed(parsed.number)
}

/** For lookups: the E.164 form when there is one, else the trimmed text (which then matches nothing stored). */
export const phoneForLookup = (raw: string): string => Result.getOrElse(normalizePhone(raw), () => raw.trim())
