/**
 * Calendar arithmetic of reports in the profile's time zone (IANA, through Intl): today's date,
 * the relative ranges, and the next scheduled slot. A slot at an hour a DST change skips is taken
 * at the instant the clock shows after the jump; an hour shown twice, at its first occurrence.
 */
import type { RelativeRange, StoredSchedule, Weekday } from "../../../schema/reports.ts"
import { WEEKDAYS } from "../../../schema/reports.ts"

const DAY_MS = 86_400_000

const partsIn = (timeZone: string, at: Date) => {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit"
  }).formatToParts(at)
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? "0")
  return { year: get("year"), month: get("month"), day: get("day"), hour: get("hour"), minute: get("minute"), second: get("second") }
}

/** Whether Intl knows the zone. */
export const isTimeZone = (timeZone: string): boolean => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone })
    return true
  } catch {
    return false
  }
}

/** Milliseconds the zone's clock is ahead of UTC at `at`. */
const offsetAt = (timeZone: string, at: number) => {
  const p = partsIn(timeZone, new Date(at))
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(at / 1000) * 1000
}

/** The UTC instant the zone's clock shows `date` (YYYY-MM-DD) at `hour`:00. */
export const zonedInstant = (timeZone: string, date: string, hour: number): Date => {
  const [y = 1970, m = 1, d = 1] = date.split("-").map(Number)
  const wall = Date.UTC(y, m - 1, d, hour)
  const first = wall - offsetAt(timeZone, wall)
  const second = wall - offsetAt(timeZone, first)
  return new Date(Math.min(first, second))
}

const dateString = (ms: number) => new Date(ms).toISOString().slice(0, 10)
export const addDays = (date: string, days: number) => dateString(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS)

/** The zone's calendar date at `at`. */
export const todayIn = (timeZone: string, at: Date): string => {
  const p = partsIn(timeZone, at)
  return `${p.year}-${String(p.month).padStart(2, "0")}-${String(p.day).padStart(2, "0")}`
}

/** The first and last day of a relative range, given the profile's today. */
export const resolveRange = (range: RelativeRange, today: string): { readonly start: string; readonly end: string } => {
  switch (range) {
    case "today":
      return { start: today, end: today }
    case "yesterday":
      return { start: addDays(today, -1), end: addDays(today, -1) }
    case "last_7_days":
      return { start: addDays(today, -6), end: today }
    case "last_30_days":
      return { start: addDays(today, -29), end: today }
    case "month_to_date":
      return { start: `${today.slice(0, 8)}01`, end: today }
    case "last_month": {
      const end = addDays(`${today.slice(0, 8)}01`, -1)
      return { start: `${end.slice(0, 8)}01`, end }
    }
  }
}

const weekdayOf = (date: string): Weekday => WEEKDAYS[(new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7] ?? "monday"

/** The first slot of the schedule strictly after `after`, in the zone. */
export const nextSlot = (schedule: StoredSchedule, timeZone: string, after: Date): Date => {
  const start = addDays(todayIn(timeZone, after), -1)
  // 62 days cover a month's slot whatever the month lengths.
  for (let i = 0; i < 62; i++) {
    const date = addDays(start, i)
    const matches = schedule.frequency === "daily" ||
      (schedule.frequency === "weekly" && weekdayOf(date) === schedule.weekday) ||
      (schedule.frequency === "monthly" && Number(date.slice(8, 10)) === (schedule.day_of_month ?? 1))
    if (!matches) continue
    const slot = zonedInstant(timeZone, date, schedule.hour)
    if (slot.getTime() > after.getTime()) return slot
  }
  // Unreachable for a valid schedule; a day later keeps the worker moving rather than stuck.
  return new Date(after.getTime() + DAY_MS)
}
