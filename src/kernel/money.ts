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

/**
 * The literal text of `properties.value` in a raw JSON body, when it is a JSON number; None
 * when it is absent or not a number (a decimal string is read from the decoded payload).
 */
export const rawValueLiteral = (body: string): Option.Option<string> => rawNumberLiteral(body, ["properties", "value"])

/**
 * The literal text of the JSON number at `path` (object keys from the root) in a raw JSON
 * body; None when it is absent, not a number, or the body is not JSON. The payments routes read
 * `amount` with it. A scan, not a parse: only the members on the path are read, the rest skipped
 * (a reviver parse called back for every value was 2-3 % of ingest's CPU). As `JSON.parse`, a key
 * repeated in an object counts in its last place, and escaped keys count as their text.
 */
export const rawNumberLiteral = (body: string, path: ReadonlyArray<string>): Option.Option<string> => {
  const scanner = new LiteralScanner(body)
  scanner.space()
  const found = path.length === 0 ? scanner.numberOrSkip() : scanner.objectMember(path, 0)
  scanner.space()
  return scanner.ok && scanner.atEnd() && found !== undefined ? Option.some(found) : Option.none()
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const LITERALS = ["true", "false", "null"] as const

class LiteralScanner {
  private readonly text: string
  private i = 0
  ok = true
  constructor(text: string) {
    this.text = text
  }

  atEnd(): boolean {
    return this.i === this.text.length
  }

  space(): void {
    const text = this.text
    let i = this.i
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c !== 32 && c !== 9 && c !== 10 && c !== 13) break
      i++
    }
    this.i = i
  }

  private fail(): undefined {
    this.ok = false
    this.i = this.text.length
    return undefined
  }

  /** A string token at the cursor, as its value. */
  private string(): string | undefined {
    const text = this.text
    if (text.charCodeAt(this.i) !== 34) return this.fail()
    const start = this.i
    let i = start + 1
    let escaped = false
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c === 34) break
      if (c === 92) {
        escaped = true
        i += 2
        continue
      }
      if (c < 32) return this.fail()
      i++
    }
    if (i >= text.length) return this.fail()
    this.i = i + 1
    if (!escaped) return text.slice(start + 1, i)
    try {
      return JSON.parse(text.slice(start, i + 1)) as string
    } catch {
      return this.fail()
    }
  }

  /** The number at the cursor as written; any other value is skipped and answers undefined. */
  numberOrSkip(): string | undefined {
    NUMBER.lastIndex = this.i
    const match = NUMBER.exec(this.text)
    if (match !== null) {
      this.i = NUMBER.lastIndex
      return match[0]
    }
    this.skip()
    return undefined
  }

  /** A member's key and its colon, at the cursor: the key; undefined when the body is not JSON. */
  private key(): string | undefined {
    const key = this.string()
    this.space()
    if (!this.ok || this.text.charCodeAt(this.i) !== 58) return this.fail()
    this.i++
    this.space()
    return key
  }

  /**
   * Skips one value of any kind. A loop with the open containers on a list, not a recursion: an open
   * member of `properties` may nest arrays as deep as the body allows, and must not exhaust the stack.
   */
  private skip(): void {
    const text = this.text
    const closers: Array<number> = []
    for (;;) {
      const c = text.charCodeAt(this.i)
      if (c === 123 || c === 91) {
        const close = c === 123 ? 125 : 93
        this.i++
        this.space()
        if (text.charCodeAt(this.i) === close) {
          this.i++
        } else {
          closers.push(close)
          if (c === 123 && this.key() === undefined) return
          continue
        }
      } else if (c === 34) {
        this.string()
        if (!this.ok) return
      } else {
        NUMBER.lastIndex = this.i
        if (NUMBER.exec(text) !== null) {
          this.i = NUMBER.lastIndex
        } else {
          const literal = LITERALS.find((word) => text.startsWith(word, this.i))
          if (literal === undefined) return void this.fail()
          this.i += literal.length
        }
      }
      // After a value: close what ends here, then the next member or element.
      for (;;) {
        const close = closers.at(-1)
        if (close === undefined) return
        this.space()
        const next = text.charCodeAt(this.i)
        this.i++
        if (next === close) {
          closers.pop()
          continue
        }
        if (next !== 44) return void this.fail()
        this.space()
        if (close === 125 && this.key() === undefined) return
        break
      }
    }
  }

  /** At an object: the literal at `path[depth..]` among its members (the last member of a repeated key). */
  objectMember(path: ReadonlyArray<string>, depth: number): string | undefined {
    const text = this.text
    if (text.charCodeAt(this.i) !== 123) {
      this.skip()
      return undefined
    }
    this.i++
    this.space()
    if (text.charCodeAt(this.i) === 125) {
      this.i++
      return undefined
    }
    let found: string | undefined
    while (this.ok) {
      const key = this.key()
      if (key === undefined) return undefined
      if (key === path[depth]) found = depth === path.length - 1 ? this.numberOrSkip() : this.objectMember(path, depth + 1)
      else this.skip()
      this.space()
      const next = text.charCodeAt(this.i)
      this.i++
      if (next === 125) return found
      if (next !== 44) return this.fail()
      this.space()
    }
    return undefined
  }
}

/** ISO-4217 currencies whose minor unit is not a hundredth (all others: 2 decimals). */
const MINOR_EXPONENTS: Readonly<Record<string, number>> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0,
  XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4
}

export const minorExponent = (currency: string): number => MINOR_EXPONENTS[currency] ?? 2
