/**
 * Calendars and events over HTTP (routes.tsv Calendar; decision 0080): proxied live to the
 * connected calendar provider. Scopes as the spec names them: `calendar.read` reads,
 * `calendar.manage` creates and shares calendars, `calendar` writes events. Attendee and share
 * addresses are personal data: every call lands in the PII access log.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CalendarBody,
  CalendarCreated,
  CalendarEventCreated,
  CalendarEventBody,
  CalendarEventPage,
  CalendarPage,
  CalendarParam,
  CalendarsQuery,
  CreateCalendar,
  CreateEvent,
  EventParam,
  EventsQuery,
  ShareCalendar,
  UpdateEvent
} from "../../../schema/calendar.ts"
import {
  AdplatformUnavailable,
  InvalidParameter,
  InvalidState,
  profileErrors,
  RateLimitExceeded,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const errors = [
  ...profileErrors,
  InvalidParameter.wire,
  ValidationError.wire,
  wireUnprocessable,
  InvalidState.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

const scoped = (scope: "calendar.read" | "calendar" | "calendar.manage", write: boolean) =>
  policy({ scopes: [scope], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: write ? "optional" : "none", personData: true })

const failures =
  " 409 `invalid_state` with reason `calendar_connection_required` without a calendar connection, `reconnect_required` " +
  "(with `reconnect_required: true`) when its grant is dead; 404 for a calendar or event the connected account does not " +
  "hold; 422 `validation_error` for a value the provider refuses; 429 `rate_limit_exceeded` with `Retry-After` when it " +
  "throttles; 502 `adplatform_unavailable` (reason `provider_unavailable`) only when it cannot be reached."

export const CalendarApi = HttpApiGroup.make("calendar")
  .add(
    HttpApiEndpoint.get("listCalendars", "/calendars", { query: CalendarsQuery, success: CalendarPage, error: errors })
      .annotate(OpenApi.Summary, "The connected account's calendars, read live from the provider")
      .annotate(OpenApi.Description, "Each with `shared_with` (address and role). Paged: `limit` 1 to 100, `cursor`." + failures)
      .annotateMerge(scoped("calendar.read", false)),
    HttpApiEndpoint.post("createCalendar", "/calendars", { payload: CreateCalendar, success: CalendarCreated, error: errors })
      .annotate(OpenApi.Summary, "Creates a calendar at the provider")
      .annotate(OpenApi.Description, "Body `{name, timezone?}` (an IANA zone; the account's when absent). Optional `Idempotency-Key`." + failures)
      .annotateMerge(scoped("calendar.manage", true)),
    HttpApiEndpoint.post("shareCalendar", "/calendars/:calendarId/share", {
      params: CalendarParam,
      payload: ShareCalendar,
      success: CalendarBody,
      error: errors
    })
      .annotate(OpenApi.Summary, "Shares a calendar with an address as reader or writer")
      .annotate(OpenApi.Description, "Body `{email, role?}` (`reader` by default); sharing again with the same address changes the role. Answers the calendar." + failures)
      .annotateMerge(scoped("calendar.manage", true)),
    HttpApiEndpoint.get("listEvents", "/calendars/:calendarId/events", {
      params: CalendarParam,
      query: EventsQuery,
      success: CalendarEventPage,
      error: errors
    })
      .annotate(OpenApi.Summary, "A calendar's confirmed events by start, read live from the provider")
      .annotate(
        OpenApi.Description,
        "`time_min`, `time_max` (a date, taken as 00:00 UTC, or a date-time with an offset) bound the window; `time_max` not after " +
          "`time_min` is 400 `validation_error`. Paged: `limit` 1 to 100, `cursor`." + failures
      )
      .annotateMerge(scoped("calendar.read", false)),
    HttpApiEndpoint.post("createEvent", "/calendars/:calendarId/events", {
      params: CalendarParam,
      payload: CreateEvent,
      success: CalendarEventCreated,
      error: errors
    })
      .annotate(OpenApi.Summary, "Creates an event at the provider")
      .annotate(OpenApi.Description, "Body `{start, end, summary, attendees?}`; `end` not after `start` is 400 `validation_error`. Optional `Idempotency-Key`." + failures)
      .annotateMerge(scoped("calendar", true)),
    HttpApiEndpoint.patch("updateEvent", "/calendars/:calendarId/events/:eventId", {
      params: EventParam,
      payload: UpdateEvent,
      success: CalendarEventBody,
      error: errors
    })
      .annotate(OpenApi.Summary, "Moves or edits an event at the provider")
      .annotate(OpenApi.Description, "Any of `start`, `end`, `summary`, `attendees` (the list replaces the old one); none is 400. A cancelled event is 409 `invalid_state` (reason `event_cancelled`)." + failures)
      .annotateMerge(scoped("calendar", true)),
    HttpApiEndpoint.delete("cancelEvent", "/calendars/:calendarId/events/:eventId", {
      params: EventParam,
      success: CalendarEventBody,
      error: errors
    })
      .annotate(OpenApi.Summary, "Cancels an event at the provider (attendees are told by the provider)")
      .annotate(OpenApi.Description, "Answers the event with `status: cancelled`; cancelling it again answers the same." + failures)
      .annotateMerge(scoped("calendar", false))
  )
  .prefix("/api/v1")
