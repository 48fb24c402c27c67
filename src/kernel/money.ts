/**
 * Exact money on the way in (decision 0029). A JSON number is a double once `JSON.parse` has
 * read it (`12345678901234.123456` comes back as `12345678901234.123`), so the ingest handler
 * re-reads the raw body with the source-text access of `JSON.parse` (the third argument of the
 * reviver, in every runtime this service supports: Node >= 22, Deno 2) and keeps the literal.
 * The literal (or a decimal string the sender chose to send) is checked and normalised here
 * with exact decimal arithmetic, then stored as `numeric(20,6)`: no float anywhere.
 */
import { BigDecimal, Option, Result } from "effect"

/** `numeric(20,6)`: 14 integer digits and 6 decimals. */
export const MAX_INTEGER_DIGITS = 14
export const MAX_DECIMALS = 6

/** A JSON number, or the same with leading zeros, as a decimal string may carry. */
const DECIMAL_TEXT = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/**
 * The shortest plain decimal text of an amount (`"19.99"`, `"-5"`, `"0.000001"`), or why it
 * is not one we store exactly.
 */
export const normaliseAmount = (literal: string): Result.Result<string, string> => {
  if (!DECIMAL_TEXT.test(literal)) return Result.fail("Expected a decimal number such as 19.99")
  const parsed = BigDecimal.fromString(literal)
  if (Option.isNone(parsed)) return Result.fail("Expected a decimal number such as 19.99")
  const amount = BigDecimal.normalize(parsed.value)
  if (amount.scale > MAX_DECIMALS) return Result.fail(`At most ${MAX_DECIMALS} decimal places`)
  const negative = amount.value < 0n
  const digits = (negative ? -amount.value : amount.value).toString()
  // Integer digits without building a huge string for an exponent like 1e999999.
  const integerDigits = amount.value === 0n ? 1 : digits.length - amount.scale
  if (integerDigits > MAX_INTEGER_DIGITS) return Result.fail(`At most ${MAX_INTEGER_DIGITS} integer digits`)
  if (amount.value === 0n) return Result.succeed("0")
  const sign = negative ? "-" : ""
  if (amount.scale <= 0) return Result.succeed(`${sign}${digits}${"0".repeat(-amount.scale)}`)
  const padded = digits.padStart(amount.scale + 1, "0")
  return Result.succeed(`${sign}${padded.slice(0, padded.length - amount.scale)}.${padded.slice(padded.length - amount.scale)}`)
}

/** A number of the raw JSON, kept as the text the sender wrote. */
class NumberText {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}

interface ReviverContext {
  readonly source?: string
}

/**
 * The literal text of `properties.value` in a raw JSON body, when it is a JSON number; None
 * when it is absent or not a number (a decimal string is read from the decoded payload).
 */
export const rawValueLiteral = (body: string): Option.Option<string> => rawNumberLiteral(body, ["properties", "value"])

/**
 * The literal text of the JSON number at `path` (object keys from the root) in a raw JSON
 * body; None when it is absent or not a number. The payments routes read `amount` with it.
 */
export const rawNumberLiteral = (body: string, path: ReadonlyArray<string>): Option.Option<string> => {
  let missingSource = false
  let root: unknown
  try {
    root = JSON.parse(body, function(_key: string, value: unknown, context?: ReviverContext) {
      if (typeof value !== "number") return value
      if (context?.source === undefined) {
        missingSource = true
        return value
      }
      return new NumberText(context.source)
    })
  } catch {
    return Option.none()
  }
  if (missingSource) throw new Error("This runtime's JSON.parse gives no source text: exact money needs Node >= 22 or Deno 2")
  let value: unknown = root
  for (const key of path) {
    value = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined
  }
  return value instanceof NumberText ? Option.some(value.text) : Option.none()
}

/** ISO-4217 currencies whose minor unit is not a hundredth (all others: 2 decimals). */
const MINOR_EXPONENTS: Readonly<Record<string, number>> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0,
  XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4
}

export const minorExponent = (currency: string): number => MINOR_EXPONENTS[currency] ?? 2
