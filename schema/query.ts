/**
 * Query-string parameters as the contract states them. Every value arrives as text; these
 * schemas say on the wire (pattern, enum, length, format: what the published description shows)
 * exactly what the server accepts, and decode to typed values, so a handler never re-checks a
 * parameter. A value they refuse answers 400 `invalid_parameter` naming the parameter, or the
 * code a check names with `ErrorCodeAnnotation` (the spec answers bad dates `invalid_date_range`).
 * Rules across parameters (one filter at a time, `start` before `end`) stay with the services.
 */
import { Schema, SchemaTransformation } from "effect"
import { CALENDAR_DATE_PATTERN, DATE_OR_DATE_TIME_PATTERN } from "./dates.ts"

/** Annotation key on a check: the error code its failure answers instead of `invalid_parameter`. */
export const ErrorCodeAnnotation = "svc/errorCode"

const digitsAfter = (count: number) => (count === 0 ? "" : count === 1 ? "\\d" : `\\d{${count}}`)
const digitRange = (low: number, high: number) => (low === high ? String(low) : `[${low}-${high}]`)

/**
 * The alternatives of a regular expression matching the decimal integers `min` to `max`, written
 * canonically (no sign, no leading zero). A string parameter has no `minimum`/`maximum` in JSON
 * Schema, so the range is stated as the pattern itself.
 */
export const integerRangePattern = (min: 0 | 1, max: number): string => {
  const text = String(max)
  const alternatives: Array<string> = min === 0 ? ["0"] : []
  for (let length = 1; length < text.length; length++) alternatives.push(`[1-9]${digitsAfter(length - 1)}`)
  for (let index = 0; index < text.length; index++) {
    const digit = Number(text[index])
    const low = index === 0 ? 1 : 0
    if (digit - 1 >= low) alternatives.push(`${text.slice(0, index)}${digitRange(low, digit - 1)}${digitsAfter(text.length - index - 1)}`)
  }
  alternatives.push(text)
  return `^(?:${alternatives.join("|")})$`
}

/** A whole number from `min` to `max` (`limit`, `offset`), decoded to a number. */
export const IntegerParam = (options: {
  readonly min: 0 | 1
  readonly max: number
  readonly default: number
  readonly description: string
}) =>
  Schema.String.annotate({ description: options.description, default: String(options.default) }).check(
    // The `u` flag is what lets the pattern into the published description.
    Schema.isPattern(new RegExp(integerRangePattern(options.min, options.max), "u"), {
      expected: `an integer from ${options.min} to ${options.max}`
    })
  ).pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.numberFromString))

/** `limit` of a list: 1 to `max`. */
export const LimitParam = (max: number, fallback: number, description?: string) =>
  IntegerParam({ min: 1, max, default: fallback, description: description ?? `1 to ${max}, default ${fallback}` })

/** One of `values`; `fallback` is what the server uses without it (published as `default`). */
export const LiteralParam = <const L extends ReadonlyArray<string>>(values: L, description: string, fallback?: L[number]) =>
  Schema.Literals(values).annotate({
    description,
    expected: `one of ${values.join(", ")}`,
    ...(fallback === undefined ? {} : { default: fallback })
  })

/** Any text but the empty string. */
export const NonEmptyParam = (description: string) =>
  Schema.String.annotate({ description }).check(Schema.isMinLength(1, { message: "must not be empty" }))

/** Text with at least one character that is not white space (services trim it). */
export const NonBlankParam = (description: string) =>
  Schema.String.annotate({ description }).check(Schema.isPattern(/\S/u, { message: "must not be blank" }))

/** A customer's (or any record's) id: a UUID, any case. */
export const UuidParam = (description: string) =>
  Schema.String.annotate({ description, format: "uuid" }).check(
    Schema.isPattern(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/u, {
      expected: "a UUID (8-4-4-4-12 hexadecimal digits)"
    })
  )

/** Opaque `pagination.cursor` of a previous page: only the server can tell a good one. */
export const CursorParam = (description = "pagination.cursor of the previous page") =>
  Schema.String.annotate({ description })

const dateRange = { [ErrorCodeAnnotation]: "invalid_date_range" }

/**
 * `YYYY-MM-DD`, a real calendar day, of the analytics reads: a malformed or impossible date
 * answers 400 `invalid_date_range`, as the spec's error table says of invalid dates.
 */
export const CalendarDateParam = (description: string) =>
  Schema.String.annotate({ description, format: "date" }).check(
    Schema.isPattern(new RegExp(CALENDAR_DATE_PATTERN, "u"), { ...dateRange, expected: "a real calendar day (YYYY-MM-DD)" })
  )

/**
 * `days` of the analytics reads: a whole number of days; more than `max` is a range the spec
 * refuses with 400 `invalid_date_range`.
 */
export const DaysParam = (max: number, fallback: number, description: string) =>
  Schema.String.annotate({ description, default: String(fallback) }).check(
    // Published through the second check, whose pattern is the exact range.
    Schema.isPattern(/^[1-9]\d{0,5}$/u, { expected: `a whole number of days from 1 to ${max}`, toJsonSchema: () => ({}) }),
    Schema.makeFilter((value: string) => (Number(value) <= max ? undefined : `at most ${max} days, got ${value}`), {
      ...dateRange,
      toJsonSchema: () => ({ pattern: integerRangePattern(1, max) })
    })
  ).pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.numberFromString))

/** An ISO 8601 date (`2026-11-21`) or date-time with an offset (`2026-11-21T14:20:00Z`), a real calendar day. */
export const DateOrDateTimeParam = (description: string) =>
  Schema.String.annotate({ description }).check(
    Schema.isPattern(new RegExp(DATE_OR_DATE_TIME_PATTERN, "u"), {
      expected: "an ISO 8601 date (2026-11-21) or date-time with an offset (2026-11-21T14:20:00Z), a real calendar day"
    })
  )
