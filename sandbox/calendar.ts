/**
 * `calendar`, a calendar provider's API: calendars per account, events (start, end, summary,
 * attendees, `confirmed` or `cancelled`), free/busy over a window, creating and cancelling
 * events. Someone booking or changing an event in the provider itself arrives as
 * `{arrive: {kind: "event", ...}}` or `{arrive: {kind: "event_changed", event_id, ...}}` and is
 * pushed to the subscriptions (`PATCH _state {objects}` changes quietly, pushing nothing).
 *
 * `_state`: `{accounts: [{id, name, timezone}], calendars: [{id, account_id, name, timezone,
 * primary}], events: [{id, calendar_id, start, end, summary, attendees: [{email,
 * response_status}], status, updated_at}], write_count}`.
 */
import {
  type ApiContext,
  defineSandbox,
  hashOf,
  invalid,
  notFound,
  ok,
  paged,
  type PushContext,
  refuse,
  type SandboxReply,
  seededRandom
} from "./kind.ts"
import { grantDeathPayload, idMaker, isRecord, patchIn, text } from "./messaging.ts"

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
  /** Who else sees it, and how (`reader` or `writer`). */
  shared_with: Array<{ email: string; role: "reader" | "writer" }>
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

interface CalendarWorld {
  readonly accounts: Array<CalendarAccount>
  readonly calendars: Array<Calendar>
  readonly events: Array<CalendarEvent>
  readonly nextId: (prefix: string) => string
}

const isInstant = (value: string | null): value is string => value !== null && !Number.isNaN(Date.parse(value))

/** Seeded meetings fall in the working week starting this Monday, so windows in tests are fixed. */
export const CALENDAR_SEED_WEEK = "2026-12-07T00:00:00.000Z"
const WEEK_START = Date.parse(CALENDAR_SEED_WEEK)
const HOUR = 3_600_000

const attendeesFrom = (value: unknown): Array<Attendee> | null => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return null
  const out: Array<Attendee> = []
  for (const item of value) {
    const email = isRecord(item) ? text(item["email"]) : text(item)
    if (email === null || !email.includes("@")) return null
    out.push({ email, response_status: "needsAction" })
  }
  return out
}

const accountOf = (world: CalendarWorld, calendarId: string) => world.calendars.find((c) => c.id === calendarId)?.account_id

const pushEvent = (world: CalendarWorld, ctx: PushContext, event: CalendarEvent, kind: "event.created" | "event.updated" | "event.cancelled") => {
  const accountId = accountOf(world, event.calendar_id) ?? ""
  ctx.push(accountId, {
    event: kind,
    event_id: world.nextId("cal_change"),
    account_id: accountId,
    calendar_id: event.calendar_id,
    timestamp: Math.floor(ctx.nowMs / 1000),
    data: event
  })
}

type EventFields = Pick<CalendarEvent, "start" | "end" | "summary" | "attendees">

/**
 * The event's fields after `body` (a new event, a PATCH, a `event_changed` arrival): a field
 * left out keeps its value in `base`. Answers the refusal's text when a field is wrong.
 */
const eventFields = (base: EventFields, body: Readonly<Record<string, unknown>>): EventFields | string => {
  const start = text(body["start"]) ?? base.start
  const end = text(body["end"]) ?? base.end
  if (!isInstant(start) || !isInstant(end) || Date.parse(end) <= Date.parse(start)) return "start and end must be instants, end after start"
  const attendees = body["attendees"] === undefined ? base.attendees : attendeesFrom(body["attendees"])
  if (attendees === null) return "attendees must be email addresses"
  return {
    start: new Date(start).toISOString(),
    end: new Date(end).toISOString(),
    summary: text(body["summary"]) ?? base.summary,
    attendees
  }
}

/** A new event has no start or end until the body gives them. */
const NEW_EVENT: EventFields = { start: "", end: "", summary: "(no title)", attendees: [] }

const createEvent = (world: CalendarWorld, calendar: Calendar, body: Readonly<Record<string, unknown>>, nowMs: number): CalendarEvent | string => {
  const fields = eventFields(NEW_EVENT, body)
  if (typeof fields === "string") return fields
  const event: CalendarEvent = {
    id: world.nextId("cal_evt"),
    calendar_id: calendar.id,
    ...fields,
    status: "confirmed",
    updated_at: new Date(nowMs).toISOString()
  }
  world.events.push(event)
  return event
}

/** Sets the changed fields (and `status` when given) and stamps the change. */
const applyChange = (event: CalendarEvent, fields: EventFields, nowMs: number, status: CalendarEvent["status"] = event.status) => {
  event.start = fields.start
  event.end = fields.end
  event.summary = fields.summary
  event.attendees = fields.attendees
  event.status = status
  event.updated_at = new Date(nowMs).toISOString()
}

const overlaps = (event: CalendarEvent, min: number, max: number) => Date.parse(event.end) > min && Date.parse(event.start) < max

/** The calendar named by `:calendar`, if the grant reaches its account. */
const reached = (world: CalendarWorld, ctx: ApiContext) => {
  const calendar = world.calendars.find((c) => c.id === ctx.params["calendar"])
  return calendar !== undefined && ctx.reaches(calendar.account_id) ? calendar : undefined
}

/** The event named by `:event` in the calendar named by `:calendar`, if the grant reaches it. */
const reachedEvent = (world: CalendarWorld, ctx: ApiContext) => {
  const calendar = reached(world, ctx)
  return calendar === undefined ? undefined : world.events.find((e) => e.id === ctx.params["event"] && e.calendar_id === calendar.id)
}

const freeBusy = (world: CalendarWorld, ctx: ApiContext): SandboxReply => {
  const account = ctx.params["account"] ?? ""
  if (!world.accounts.some((a) => a.id === account) || !ctx.reaches(account)) return notFound(`account ${account}`)
  const body = isRecord(ctx.body) ? ctx.body : {}
  const min = text(body["time_min"])
  const max = text(body["time_max"])
  if (!isInstant(min) || !isInstant(max) || Date.parse(max) <= Date.parse(min)) return invalid("time_min and time_max must be instants, max after min")
  const wanted: ReadonlyArray<unknown> = Array.isArray(body["calendar_ids"])
    ? body["calendar_ids"]
    : world.calendars.filter((c) => c.account_id === account).map((c) => c.id)
  const calendars: Record<string, unknown> = {}
  for (const calendarId of wanted) {
    if (typeof calendarId !== "string" || accountOf(world, calendarId) !== account) return notFound(`calendar ${String(calendarId)}`)
    calendars[calendarId] = {
      busy: world.events
        .filter((e) => e.calendar_id === calendarId && e.status === "confirmed" && overlaps(e, Date.parse(min), Date.parse(max)))
        .toSorted((a, b) => a.start.localeCompare(b.start))
        .map((e) => ({ start: e.start, end: e.end }))
    }
  }
  return ok({ time_min: min, time_max: max, calendars })
}

export const calendarSandbox = defineSandbox<CalendarWorld>({
  provider: "calendar",
  seed: () => {
    const accounts: Array<CalendarAccount> = [1, 2, 3].map((n) => ({
      id: `cal_acct_000${n}`,
      name: `sandbox-calendar-${n}@sandbox-mail.example`,
      timezone: "Europe/Lisbon"
    }))
    const calendars: Array<Calendar> = accounts.flatMap((account) => [
      { id: `${account.id}_primary`, account_id: account.id, name: account.name, timezone: account.timezone, primary: true, shared_with: [] },
      { id: `${account.id}_team`, account_id: account.id, name: "Team bookings", timezone: account.timezone, primary: false, shared_with: [] }
    ])
    const world: CalendarWorld = { accounts, calendars, events: [], nextId: idMaker() }
    // Four one-hour meetings per calendar in working hours of the seed week.
    for (const calendar of calendars) {
      const random = seededRandom(hashOf(`calendar:${calendar.id}`))
      for (let i = 0; i < 4; i++) {
        const start = WEEK_START + Math.floor(random() * 5) * 24 * HOUR + (9 + Math.floor(random() * 8)) * HOUR
        world.events.push({
          id: world.nextId("cal_evt"),
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
    return world
  },
  accounts: (world) => world.accounts.map((a) => ({ id: a.id, name: a.name, currency: null, timezone: a.timezone })),
  readScopes: ["calendar.readonly"],
  writeScope: "calendar.events",
  routes: [
    {
      method: "GET",
      path: "/v1/accounts/:account/calendars",
      handler: (world, ctx) => {
        const account = ctx.params["account"] ?? ""
        if (!ctx.reaches(account)) return notFound(`account ${account}`)
        return paged(world.calendars.filter((c) => c.account_id === account), ctx.query)
      }
    },
    { method: "POST", path: "/v1/accounts/:account/freebusy", handler: freeBusy },
    {
      method: "POST",
      path: "/v1/accounts/:account/calendars",
      handler: (world, ctx) => {
        const account = world.accounts.find((a) => a.id === ctx.params["account"])
        if (account === undefined || !ctx.reaches(account.id)) return notFound(`account ${ctx.params["account"]}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        const body = isRecord(ctx.body) ? ctx.body : {}
        const name = text(body["name"])
        if (name === null) return invalid("name is required")
        const created: Calendar = {
          id: world.nextId(`${account.id}_cal`),
          account_id: account.id,
          name,
          timezone: text(body["timezone"]) ?? account.timezone,
          primary: false,
          shared_with: []
        }
        world.calendars.push(created)
        ctx.countWrite()
        return ok(created)
      }
    },
    {
      // Sharing again with the same person changes the role.
      method: "POST",
      path: "/v1/calendars/:calendar/acl",
      handler: (world, ctx) => {
        const calendar = reached(world, ctx)
        if (calendar === undefined) return notFound(`calendar ${ctx.params["calendar"]}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        const body = isRecord(ctx.body) ? ctx.body : {}
        const email = text(body["email"])
        const role = body["role"] ?? "reader"
        if (email === null || !email.includes("@") || (role !== "reader" && role !== "writer")) {
          return invalid("email and role (reader or writer) are required")
        }
        calendar.shared_with = [...calendar.shared_with.filter((s) => s.email !== email), { email, role }]
        ctx.countWrite()
        return ok(calendar)
      }
    },
    {
      method: "GET",
      path: "/v1/calendars/:calendar/events",
      handler: (world, ctx) => {
        const calendar = reached(world, ctx)
        if (calendar === undefined) return notFound(`calendar ${ctx.params["calendar"]}`)
        const min = ctx.query.get("time_min")
        const max = ctx.query.get("time_max")
        const from = isInstant(min) ? Date.parse(min) : Number.NEGATIVE_INFINITY
        const to = isInstant(max) ? Date.parse(max) : Number.POSITIVE_INFINITY
        const cancelledToo = ctx.query.get("show_cancelled") === "true"
        return paged(
          world.events
            .filter((e) => e.calendar_id === calendar.id && (cancelledToo || e.status === "confirmed") && overlaps(e, from, to))
            .toSorted((a, b) => a.start.localeCompare(b.start)),
          ctx.query
        )
      }
    },
    {
      method: "POST",
      path: "/v1/calendars/:calendar/events",
      handler: (world, ctx) => {
        const calendar = reached(world, ctx)
        if (calendar === undefined) return notFound(`calendar ${ctx.params["calendar"]}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        const created = createEvent(world, calendar, isRecord(ctx.body) ? ctx.body : {}, ctx.nowMs)
        if (typeof created === "string") return invalid(created)
        ctx.countWrite()
        return ok(created)
      }
    },
    {
      method: "GET",
      path: "/v1/calendars/:calendar/events/:event",
      handler: (world, ctx) => {
        const calendar = reached(world, ctx)
        const event = calendar === undefined ? undefined : world.events.find((e) => e.id === ctx.params["event"] && e.calendar_id === calendar.id)
        return event === undefined ? notFound(`event ${ctx.params["event"]}`) : ok(event)
      }
    },
    {
      method: "PATCH",
      path: "/v1/calendars/:calendar/events/:event",
      handler: (world, ctx) => {
        const event = reachedEvent(world, ctx)
        if (event === undefined) return notFound(`event ${ctx.params["event"]}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        const fields = eventFields(event, isRecord(ctx.body) ? ctx.body : {})
        if (typeof fields === "string") return invalid(fields)
        if (event.status === "cancelled") return refuse(409, "event_cancelled", "A cancelled event cannot be changed.")
        applyChange(event, fields, ctx.nowMs)
        ctx.countWrite()
        return ok(event)
      }
    },
    {
      method: "DELETE",
      path: "/v1/calendars/:calendar/events/:event",
      handler: (world, ctx) => {
        const event = reachedEvent(world, ctx)
        if (event === undefined) return notFound(`event ${ctx.params["event"]}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        // Cancelling twice changes nothing, as the real providers' `status: cancelled` does.
        if (event.status !== "cancelled") {
          event.status = "cancelled"
          event.updated_at = new Date(ctx.nowMs).toISOString()
          ctx.countWrite()
        }
        return ok(event)
      }
    }
  ],
  state: (world) => ({ accounts: world.accounts, calendars: world.calendars, events: world.events }),
  patch: (world, change) => patchIn([world.accounts, world.calendars, world.events], change, ["account_id", "calendar_id"]),
  arrive: (world, arrival, ctx) => {
    if (arrival["kind"] === "event") {
      const calendarId = text(arrival["calendar_id"]) ?? world.calendars[0]?.id
      const calendar = world.calendars.find((c) => c.id === calendarId)
      if (calendar === undefined) return notFound(`calendar ${String(calendarId)}`)
      const created = createEvent(world, calendar, arrival, ctx.nowMs)
      if (typeof created === "string") return invalid(created)
      pushEvent(world, ctx, created, "event.created")
      return ok(created)
    }
    if (arrival["kind"] === "event_changed") {
      const event = world.events.find((e) => e.id === arrival["event_id"])
      if (event === undefined) return notFound(`event ${String(arrival["event_id"])}`)
      const fields = eventFields(event, arrival)
      if (typeof fields === "string") return invalid(fields)
      const status = arrival["status"] ?? event.status
      if (status !== "confirmed" && status !== "cancelled") return invalid("status must be confirmed or cancelled")
      applyChange(event, fields, ctx.nowMs, status)
      pushEvent(world, ctx, event, status === "cancelled" ? "event.cancelled" : "event.updated")
      return ok(event)
    }
    return invalid("arrive.kind must be event or event_changed")
  },
  grantDeath: grantDeathPayload("calendar", null)
})
