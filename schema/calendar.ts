/**
 * Calendars and their events (routes.tsv Calendar; scopes `calendar.read`, `calendar`,
 * `calendar.manage`; decision 0080): proxied live to the connected calendar provider, which is
 * the source of truth. Attendee and share addresses are personal data.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, PageQuery } from "./common.ts"
import { isIsoDateTime } from "./dates.ts"
import { DateOrDateTimeParam } from "./query.ts"

const Text = (max: number) => Schema.String.check(Schema.isPattern(/\S/u, { message: "must not be blank" }), Schema.isMaxLength(max))

const Email = Schema.String.check(
  Schema.isMaxLength(320),
  Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "Expected an email address" })
)

const Instant = Schema.String.check(
  Schema.makeFilter((value: string) =>
    isIsoDateTime(value) ? undefined : "Expected an ISO 8601 date-time with an offset, such as 2026-11-21T14:20:00Z"
  )
)

const isTimeZone = (value: string): boolean => {
  if (value.length === 0 || value.length > 64) return false
  return Intl.supportedValuesOf("timeZone").includes(value) || value === "UTC"
}

export const CalendarShare = Schema.Struct({ email: Schema.String, role: Schema.Literals(["reader", "writer"]) })

export const CalendarItem = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  timezone: Schema.String,
  primary: Schema.Boolean,
  shared_with: Schema.Array(CalendarShare)
}).annotate({ identifier: "Calendar" })

export const CalendarPage = Page(CalendarItem)
export const CalendarBody = Schema.Struct({ data: CalendarItem })
export const CalendarCreated = Schema.Struct({ data: CalendarItem }).pipe(HttpApiSchema.status(201))

export const CalendarsQuery = Schema.Struct({ ...PageQuery })
export type CalendarsQuery = typeof CalendarsQuery.Type

export const CreateCalendar = Schema.Struct({
  name: Text(200),
  /** An IANA time zone; the account's own when absent. */
  timezone: Schema.optionalKey(Schema.String.check(Schema.makeFilter((v: string) => (isTimeZone(v) ? undefined : "Expected an IANA time zone such as Europe/Madrid"))))
})
export type CreateCalendar = typeof CreateCalendar.Type

export const ShareCalendar = Schema.Struct({
  email: Email,
  /** `reader` when absent; sharing again with the same address changes the role. */
  role: Schema.optionalKey(Schema.Literals(["reader", "writer"]))
})
export type ShareCalendar = typeof ShareCalendar.Type

const ProviderId = (description: string) => Schema.String.annotate({ description }).check(Schema.isMinLength(1), Schema.isMaxLength(200))

export const CalendarParam = { calendarId: ProviderId("the calendar's id at the provider") }
export const EventParam = { ...CalendarParam, eventId: ProviderId("the event's id at the provider") }

export const CalendarEventItem = Schema.Struct({
  id: Schema.String,
  calendar_id: Schema.String,
  start: Schema.String,
  end: Schema.String,
  summary: Schema.String,
  attendees: Schema.Array(Schema.Struct({
    email: Schema.String,
    response_status: Schema.Literals(["needsAction", "accepted", "declined", "tentative"])
  })),
  status: Schema.Literals(["confirmed", "cancelled"]),
  updated_at: Schema.String
}).annotate({ identifier: "CalendarEvent" })

export const CalendarEventPage = Page(CalendarEventItem)
export const CalendarEventBody = Schema.Struct({ data: CalendarEventItem })
export const CalendarEventCreated = Schema.Struct({ data: CalendarEventItem }).pipe(HttpApiSchema.status(201))

export const EventsQuery = Schema.Struct({
  ...PageQuery,
  time_min: Schema.optionalKey(DateOrDateTimeParam("events ending after this instant")),
  time_max: Schema.optionalKey(DateOrDateTimeParam("events starting before this instant"))
})
export type EventsQuery = typeof EventsQuery.Type

const Attendees = Schema.Array(Email).check(Schema.isMaxLength(100))

export const CreateEvent = Schema.Struct({
  start: Instant,
  end: Instant,
  summary: Text(500),
  attendees: Schema.optionalKey(Attendees)
})
export type CreateEvent = typeof CreateEvent.Type

export const UpdateEvent = Schema.Struct({
  start: Schema.optionalKey(Instant),
  end: Schema.optionalKey(Instant),
  summary: Schema.optionalKey(Text(500)),
  attendees: Schema.optionalKey(Attendees)
})
export type UpdateEvent = typeof UpdateEvent.Type
