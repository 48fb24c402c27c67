/** Calendar days as `YYYY-MM-DD` strings and the day numbers the analyses compute with. */

const DAY_MS = 86_400_000
const PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/

/** Days since 1970-01-01 (UTC) of a `YYYY-MM-DD` date; throws a RangeError on anything else. */
export const dayNumber = (date: string): number => {
  const match = PATTERN.exec(date)
  if (match === null) throw new RangeError(`not a YYYY-MM-DD date: ${date}`)
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const ms = Date.UTC(year, month - 1, day)
  const back = new Date(ms)
  // Date.UTC rolls 2025-02-30 over to March: a round trip catches it.
  if (back.getUTCFullYear() !== year || back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day) {
    throw new RangeError(`not a calendar date: ${date}`)
  }
  return ms / DAY_MS
}

/** The `YYYY-MM-DD` date of a day number. */
export const dateOf = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10)

/** Day of the week, 0 = Monday … 6 = Sunday (1970-01-01 was a Thursday). */
export const weekday = (day: number): number => (((day + 3) % 7) + 7) % 7

export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const

const formatters = new Map<string, Intl.DateTimeFormat>()

/**
 * The `YYYY-MM-DD` date an instant falls on in an IANA time zone (decision 0135): experiments'
 * days are the profile's local days. An unknown zone reads as UTC (profiles keep valid zones).
 */
export const localDate = (ms: number, timeZone: string): string => {
  let format = formatters.get(timeZone)
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" })
    } catch {
      return new Date(ms).toISOString().slice(0, 10)
    }
    formatters.set(timeZone, format)
  }
  const parts = format.formatToParts(ms)
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? ""
  return `${part("year")}-${part("month")}-${part("day")}`
}
