/**
 * The calendar provider over HTTP: `/v1/accounts/<id>/calendars`, `POST
 * /v1/accounts/<id>/freebusy`, `/v1/calendars/<id>/events[/<event>]` (GET, POST, DELETE).
 */
import { Effect, Layer, Schema } from "effect"
import { ProviderEndpoints } from "../endpoints.ts"
import { ProviderHttp } from "../http.ts"
import { apiPath as path, sessionCall, sessionPages } from "../session-http.ts"
import { CalendarProvider } from "./port.ts"

const CalendarWire = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  timezone: Schema.String,
  primary: Schema.Boolean,
  shared_with: Schema.Array(Schema.Struct({ email: Schema.String, role: Schema.Literals(["reader", "writer"]) }))
})

const EventWire = Schema.Struct({
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
})

const Interval = Schema.Struct({ start: Schema.String, end: Schema.String })
const FreeBusyWire = Schema.Struct({
  calendars: Schema.Record(Schema.String, Schema.Struct({ busy: Schema.Array(Interval) }))
})


export const CalendarProviderAdapter = Layer.effect(CalendarProvider)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  return {
    calendars: (session) => sessionPages(http, session, "calendars", CalendarWire, path("accounts", session.accountId, "calendars")),
    events: (session, calendarId, window) =>
      sessionPages(http, session, "events", EventWire, path("calendars", calendarId, "events"), {
        time_min: window?.timeMin,
        time_max: window?.timeMax
      }),
    freeBusy: (session, request) =>
      sessionCall(http, session, "freeBusy", FreeBusyWire, {
        method: "POST",
        path: path("accounts", session.accountId, "freebusy"),
        json: {
          time_min: request.timeMin,
          time_max: request.timeMax,
          ...(request.calendarIds === undefined ? {} : { calendar_ids: request.calendarIds })
        }
      }).pipe(Effect.map((answer) => Object.fromEntries(Object.entries(answer.calendars).map(([id, entry]) => [id, entry.busy])))),
    createEvent: (session, calendarId, event) =>
      sessionCall(http, session, "createEvent", EventWire, {
        method: "POST",
        path: path("calendars", calendarId, "events"),
        json: { start: event.start, end: event.end, summary: event.summary, attendees: event.attendees ?? [] },
        idempotent: false
      }),
    createCalendar: (session, calendar) =>
      sessionCall(http, session, "createCalendar", CalendarWire, {
        method: "POST",
        path: path("accounts", session.accountId, "calendars"),
        json: { name: calendar.name, ...(calendar.timezone === undefined ? {} : { timezone: calendar.timezone }) },
        idempotent: false
      }),
    shareCalendar: (session, calendarId, grant) =>
      sessionCall(http, session, "shareCalendar", CalendarWire, {
        method: "POST",
        path: path("calendars", calendarId, "acl"),
        json: { email: grant.email, role: grant.role }
      }),
    updateEvent: (session, calendarId, eventId, change) =>
      sessionCall(http, session, "updateEvent", EventWire, {
        method: "PATCH",
        path: path("calendars", calendarId, "events", eventId),
        json: change
      }),
    cancelEvent: (session, calendarId, eventId) =>
      sessionCall(http, session, "cancelEvent", EventWire, { method: "DELETE", path: path("calendars", calendarId, "events", eventId) })
  }
}))

export const CalendarProviderLayer = CalendarProviderAdapter.pipe(Layer.provide(ProviderHttp.layer), Layer.provide(ProviderEndpoints.layer))
