/** Calendar dates and date-times as the contract reads them: real days, offsets required. */

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
const daysIn = (year: number, month: number) =>
  [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.(\d{1,6}))?)?(Z|[+-](?:0\d|1[0-4]):[0-5]\d)$/

const validDay = (year: string, month: string, day: string) => {
  const y = Number(year)
  const m = Number(month)
  const d = Number(day)
  return y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m)
}

/** `YYYY-MM-DD`, a real calendar day. */
export const isCalendarDate = (value: string): boolean => {
  const match = CALENDAR_DATE.exec(value)
  return match !== null && validDay(match[1] ?? "", match[2] ?? "", match[3] ?? "")
}

/** An ISO 8601 date-time with an offset (`Z` or `±hh:mm`), a real calendar day, at most microseconds. */
export const isIsoDateTime = (value: string): boolean => {
  const match = DATE_TIME.exec(value)
  return match !== null && validDay(match[1] ?? "", match[2] ?? "", match[3] ?? "")
}

/*
 * The same two forms as regular expressions, real days included (leap years too), so a published
 * `pattern` states them exactly: JSON Schema's `format: date-time` wants seconds, these do not.
 */
const YEAR = "(?:\\d{3}[1-9]|\\d{2}[1-9]\\d|\\d[1-9]\\d{2}|[1-9]\\d{3})"
const LEAP_YEAR = "(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
const MONTH_DAY = "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))"
const DAY = `(?:${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)`
const TIME = "T(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d{1,6})?)?(?:Z|[+-](?:0\\d|1[0-4]):[0-5]\\d)"

/** `isCalendarDate` as a pattern. */
export const CALENDAR_DATE_PATTERN = `^${DAY}$`
/** `isCalendarDate` or `isIsoDateTime` as a pattern. */
export const DATE_OR_DATE_TIME_PATTERN = `^${DAY}(?:${TIME})?$`
