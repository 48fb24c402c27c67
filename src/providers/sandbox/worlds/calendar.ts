/**
 * `calendar`, a calendar provider's API: calendars per account, events (start, end, summary,
 * attendees, `confirmed` or `cancelled`), free/busy over a window, creating and cancelling
 * events. Changes made in the provider's own UI (`PATCH _state {objects}` on an event) and
 * `{arrive: {kind: "event", ...}}` (someone books directly) are pushed to the subscriptions.
 */
import {
  forbidden,
  idMaker,
  invalid,
  isRecord,
  notFound,
  ok,
  page,
  patchObjects,
  personaAccountCount,
  seeded,
  str,
  unixSeconds,
  type World,
  type WorldOutcome,
  type WorldPush,
  type WorldRequest
} from "./kit.ts"

const WRITE_SCOPE = "calendar.events"
const READ_SCOPE = "calendar.readonly"

interface CalendarAccount {
  id: string
  name: string
  timezone: string
  [field: string]: unknown
}

interface Calendar {
  id: string
  account_id: string
  name: string
  timezone: string
  primary: boolean
  [field: string]: unknown
}

interface Attendee {
  email: string
  response_status: "needsAction" | "accepted" | "declined" | "tentative"
}

interface CalendarEvent {
  id: string
  calendar_id: string
  start: string
  end: string
  summary: string
  attendees: Array<Attendee>
  status: "confirmed" | "cancelled"
  updated_at: string
  [field: string]: unknown
}

const isInstant = (value: string | null): value is string => value !== null && !Number.isNaN(Date.parse(value))

/** Seeded events start on this Monday so windows in tests are fixed. */
const WEEK_START = Date.UTC(2026, 11, 7)
const HOUR = 3_600_000

const attendeesFrom = (value: unknown): Array<Attendee> | null => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return null
  const out: Array<Attendee> = []
  for (const item of value) {
    const email = isRecord(item) ? str(item["email"]) : str(item)
    if (email === null || !email.includes("@")) return null
    out.push({ email, response_status: "needsAction" })
  }
  return out
}

export const calendarWorld = (): World => {
  const nextId = idMaker()
  const accounts: Array<CalendarAccount> = [1, 2, 3].map((n) => ({
    id: `cal_acct_000${n}`,
    name: `sandbox-calendar-${n}@sandbox-mail.example`,
    timezone: "Europe/Lisbon"
  }))
  const calendars: Array<Calendar> = accounts.flatMap((account) => [
    { id: `${account.id.replace("acct", "cal")}_primary`, account_id: account.id, name: account.name, timezone: account.timezone, primary: true },
    { id: `${account.id.replace("acct", "cal")}_team`, account_id: account.id, name: "Team bookings", timezone: account.timezone, primary: false }
  ])
  const events: Array<CalendarEvent> = []
  // A few seeded meetings per calendar in the week of WEEK_START, working hours only.
  for (const calendar of calendars) {
    const random = seeded(`calendar:${calendar.id}`)
    for (let i = 0; i < 4; i++) {
      const day = Math.floor(random() * 5)
      const hour = 9 + Math.floor(random() * 8)
      const start = WEEK_START + day * 24 * HOUR + hour * HOUR
      events.push({
        id: nextId("cal_evt"),
        calendar_id: calendar.id,
        start: new Date(start).toISOString(),
        end: new Date(start + HOUR).toISOString(),
        summary: `Seeded meeting ${i + 1}`,
        attendees: [{ email: `guest${i + 1}@customer.example`, response_status: "accepted" }],
        status: "confirmed",
        updated_at: new Date(WEEK_START).toISOString()
      })
    }
  }
  let writeCount = 0

  const accountOf = (calendarId: string) => calendars.find((c) => c.id === calendarId)?.account_id

  const push = (event: CalendarEvent, kind: "event.created" | "event.updated" | "event.cancelled"): WorldPush => ({
    accountId: accountOf(event.calendar_id) ?? "",
    body: {
      event: kind,
      event_id: `${event.id}:${event.updated_at}:${kind}`,
      calendar_id: event.calendar_id,
      timestamp: unixSeconds(),
      data: event
    }
  })

  const createEvent = (calendar: Calendar, body: Record<string, unknown>): CalendarEvent | string => {
    const start = str(body["start"])
    const end = str(body["end"])
    if (!isInstant(start) || !isInstant(end) || Date.parse(end) <= Date.parse(start)) return "start and end must be instants, end after start"
    const attendees = attendeesFrom(body["attendees"])
    if (attendees === null) return "attendees must be email addresses"
    const event: CalendarEvent = {
      id: nextId("cal_evt"),
      calendar_id: calendar.id,
      start: new Date(start).toISOString(),
      end: new Date(end).toISOString(),
      summary: str(body["summary"]) ?? "(no title)",
      attendees,
      status: "confirmed",
      updated_at: new Date().toISOString()
    }
    events.push(event)
    return event
  }

  const inWindow = (event: CalendarEvent, min: number, max: number) =>
    Date.parse(event.end) > min && Date.parse(event.start) < max

  const handle = (request: WorldRequest): WorldOutcome | null => {
    const [first, id, sub, eventId] = request.path
    const owns = (accountId: string | undefined) => accountId !== undefined && request.accountIds.includes(accountId)
    if (first === "accounts" && id !== undefined) {
      if (!accounts.some((a) => a.id === id) || !owns(id)) return notFound(`account ${id}`)
      if (request.method === "GET" && sub === "calendars") return page(calendars.filter((c) => c.account_id === id), request.query)
      if (request.method === "POST" && sub === "freebusy") {
        const body = isRecord(request.body) ? request.body : {}
        const min = str(body["time_min"])
        const max = str(body["time_max"])
        if (!isInstant(min) || !isInstant(max) || Date.parse(max) <= Date.parse(min)) return invalid("time_min and time_max must be instants, max after min")
        const wanted = Array.isArray(body["calendar_ids"]) ? body["calendar_ids"] : calendars.filter((c) => c.account_id === id).map((c) => c.id)
        const result: Record<string, unknown> = {}
        for (const calendarId of wanted) {
          if (typeof calendarId !== "string" || accountOf(calendarId) !== id) return notFound(`calendar ${String(calendarId)}`)
          result[calendarId] = {
            busy: events
              .filter((e) => e.calendar_id === calendarId && e.status === "confirmed" && inWindow(e, Date.parse(min), Date.parse(max)))
              .toSorted((a, b) => a.start.localeCompare(b.start))
              .map((e) => ({ start: e.start, end: e.end }))
          }
        }
        return ok({ time_min: min, time_max: max, calendars: result })
      }
      return null
    }
    if (first === "calendars" && id !== undefined && sub === "events") {
      const calendar = calendars.find((c) => c.id === id)
      if (calendar === undefined || !owns(calendar.account_id)) return notFound(`calendar ${id}`)
      if (request.method === "GET" && eventId === undefined) {
        const min = request.query.get("time_min")
        const max = request.query.get("time_max")
        const from = isInstant(min) ? Date.parse(min) : Number.NEGATIVE_INFINITY
        const to = isInstant(max) ? Date.parse(max) : Number.POSITIVE_INFINITY
        const showCancelled = request.query.get("show_cancelled") === "true"
        return page(
          events.filter((e) => e.calendar_id === id && (showCancelled || e.status === "confirmed") && inWindow(e, from, to))
            .toSorted((a, b) => a.start.localeCompare(b.start)),
          request.query
        )
      }
      if (request.method === "POST" && eventId === undefined) {
        if (!request.scopes.includes(WRITE_SCOPE)) return forbidden(WRITE_SCOPE)
        const created = createEvent(calendar, isRecord(request.body) ? request.body : {})
        if (typeof created === "string") return invalid(created)
        writeCount++
        return ok(created)
      }
      const event = eventId === undefined ? undefined : events.find((e) => e.id === eventId && e.calendar_id === id)
      if (eventId !== undefined && event === undefined) return notFound(`event ${eventId}`)
      if (event !== undefined && request.method === "GET") return ok(event)
      if (event !== undefined && request.method === "DELETE") {
        if (!request.scopes.includes(WRITE_SCOPE)) return forbidden(WRITE_SCOPE)
        // Cancelling twice is a no-op, as with the real providers' `status: cancelled`.
        if (event.status !== "cancelled") {
          event.status = "cancelled"
          event.updated_at = new Date().toISOString()
          writeCount++
        }
        return ok(event)
      }
    }
    return null
  }

  const arrive = (body: Record<string, unknown>): WorldOutcome => {
    if (body["kind"] !== "event") return invalid("arrive.kind must be event")
    const calendar = calendars.find((c) => c.id === (str(body["calendar_id"]) ?? calendars[0]?.id))
    if (calendar === undefined) return notFound(`calendar ${String(body["calendar_id"])}`)
    const created = createEvent(calendar, body)
    if (typeof created === "string") return invalid(created)
    return ok(created, [push(created, "event.created")])
  }

  return {
    accounts: (persona) =>
      accounts.slice(0, personaAccountCount(persona)).map((a) => ({ id: a.id, name: a.name, currency: null, timezone: a.timezone })),
    scopes: (persona) => persona === "no_manage_ads_permission" ? [READ_SCOPE] : [READ_SCOPE, WRITE_SCOPE],
    writeScope: WRITE_SCOPE,
    handle,
    state: () => ({ accounts, calendars, events, write_count: writeCount }),
    patch: (body) => {
      if (isRecord(body) && isRecord(body["arrive"])) return arrive(body["arrive"])
      const { changed, outcome } = patchObjects([accounts, calendars, events], body, ["calendar_id"])
      const pushes = changed.flatMap((object) => {
        const event = events.find((e) => e === object)
        if (event === undefined) return []
        event.updated_at = new Date().toISOString()
        return [push(event, event.status === "cancelled" ? "event.cancelled" : "event.updated")]
      })
      return { reply: outcome.reply, pushes }
    }
  }
}
