/**
 * Calendars and events (decision 0080): every call goes live to the profile's `calendar`
 * connection through the `CalendarProvider` port; nothing is copied. Ids the connected account
 * does not reach answer 404, whoever they belong to.
 */
import { Context, Effect, Layer } from "effect"
import type {
  CalendarsQuery,
  CreateCalendar,
  CreateEvent,
  EventsQuery,
  ShareCalendar,
  UpdateEvent
} from "../../../schema/calendar.ts"
import { type InvalidParameter, ValidationError } from "../../../schema/errors.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { type LiveCallError, liveCaller } from "../live-call.ts"
import { ConnectionsRepo } from "../repo.ts"
import { ConnectionSessions } from "../sessions.ts"
import { streamPage, type StreamPage } from "../stream-page.ts"
import { type Calendar, type CalendarEvent, CalendarProvider } from "../providers/calendar/port.ts"
import type { ProviderError } from "../providers/errors.ts"
import type { ProviderSession } from "../providers/oauth/port.ts"

const PROVIDER = "calendar"
const DEFAULT_LIMIT = 50

/** A date alone is the start of that UTC day, as the read's description says. */
const instantOf = (value: string | undefined) =>
  value === undefined ? undefined : new Date(value.length === 10 ? `${value}T00:00:00Z` : value).toISOString()

const badRange = (message: string) => new ValidationError({ message, reason: "time_range" })

export class Calendars extends Context.Service<Calendars, {
  readonly list: (profile: ProfileContext, query: CalendarsQuery) => Effect.Effect<StreamPage<Calendar>, LiveCallError | InvalidParameter>
  readonly create: (profile: ProfileContext, body: CreateCalendar) => Effect.Effect<Calendar, LiveCallError>
  readonly share: (profile: ProfileContext, calendarId: string, body: ShareCalendar) => Effect.Effect<Calendar, LiveCallError>
  readonly events: (
    profile: ProfileContext,
    calendarId: string,
    query: EventsQuery
  ) => Effect.Effect<StreamPage<CalendarEvent>, LiveCallError | InvalidParameter>
  readonly createEvent: (profile: ProfileContext, calendarId: string, body: CreateEvent) => Effect.Effect<CalendarEvent, LiveCallError>
  readonly updateEvent: (
    profile: ProfileContext,
    calendarId: string,
    eventId: string,
    body: UpdateEvent
  ) => Effect.Effect<CalendarEvent, LiveCallError>
  readonly cancelEvent: (profile: ProfileContext, calendarId: string, eventId: string) => Effect.Effect<CalendarEvent, LiveCallError>
}>()("svc/Calendars") {
  static readonly layer = Layer.effect(Calendars)(
    Effect.gen(function*() {
      const port = yield* CalendarProvider
      const onConnection = yield* liveCaller
      const live = <A, F>(
        profile: ProfileContext,
        what: string,
        call: (session: ProviderSession) => Effect.Effect<A, ProviderError | F>
      ) => onConnection<A, F>(profile.profileId, PROVIDER, { what }, call)

      const list = Effect.fn("Calendars.list")(function*(profile: ProfileContext, query: CalendarsQuery) {
        return yield* live(profile, "The calendar list", (session) => streamPage(port.calendars(session), query.limit ?? DEFAULT_LIMIT, query.cursor))
      })

      const create = Effect.fn("Calendars.create")(function*(profile: ProfileContext, body: CreateCalendar) {
        return yield* live(profile, "The account", (session) =>
          port.createCalendar(session, { name: body.name.trim(), ...(body.timezone === undefined ? {} : { timezone: body.timezone }) }))
      })

      const share = Effect.fn("Calendars.share")(function*(profile: ProfileContext, calendarId: string, body: ShareCalendar) {
        return yield* live(profile, `Calendar ${calendarId}`, (session) =>
          port.shareCalendar(session, calendarId, { email: body.email.trim().toLowerCase(), role: body.role ?? "reader" }))
      })

      const events = Effect.fn("Calendars.events")(function*(profile: ProfileContext, calendarId: string, query: EventsQuery) {
        const timeMin = instantOf(query.time_min)
        const timeMax = instantOf(query.time_max)
        if (timeMin !== undefined && timeMax !== undefined && timeMax <= timeMin) {
          return yield* badRange("time_max must be after time_min.")
        }
        return yield* live(profile, `Calendar ${calendarId}`, (session) =>
          streamPage(
            port.events(session, calendarId, { ...(timeMin === undefined ? {} : { timeMin }), ...(timeMax === undefined ? {} : { timeMax }) }),
            query.limit ?? DEFAULT_LIMIT,
            query.cursor
          ))
      })

      const createEvent = Effect.fn("Calendars.createEvent")(function*(profile: ProfileContext, calendarId: string, body: CreateEvent) {
        if (Date.parse(body.end) <= Date.parse(body.start)) return yield* badRange("end must be after start.")
        return yield* live(profile, `Calendar ${calendarId}`, (session) =>
          port.createEvent(session, calendarId, {
            start: new Date(body.start).toISOString(),
            end: new Date(body.end).toISOString(),
            summary: body.summary.trim(),
            ...(body.attendees === undefined ? {} : { attendees: body.attendees })
          }))
      })

      const updateEvent = Effect.fn("Calendars.updateEvent")(function*(
        profile: ProfileContext,
        calendarId: string,
        eventId: string,
        body: UpdateEvent
      ) {
        if (body.start === undefined && body.end === undefined && body.summary === undefined && body.attendees === undefined) {
          return yield* new ValidationError({ message: "Nothing to change: send at least one of start, end, summary, attendees." })
        }
        if (body.start !== undefined && body.end !== undefined && Date.parse(body.end) <= Date.parse(body.start)) {
          return yield* badRange("end must be after start.")
        }
        return yield* live(profile, `Event ${eventId}`, (session) =>
          port.updateEvent(session, calendarId, eventId, {
            ...(body.start === undefined ? {} : { start: new Date(body.start).toISOString() }),
            ...(body.end === undefined ? {} : { end: new Date(body.end).toISOString() }),
            ...(body.summary === undefined ? {} : { summary: body.summary.trim() }),
            ...(body.attendees === undefined ? {} : { attendees: body.attendees })
          }))
      })

      const cancelEvent = Effect.fn("Calendars.cancelEvent")(function*(profile: ProfileContext, calendarId: string, eventId: string) {
        return yield* live(profile, `Event ${eventId}`, (session) => port.cancelEvent(session, calendarId, eventId))
      })

      return { list, create, share, events, createEvent, updateEvent, cancelEvent }
    })
  ).pipe(Layer.provide([ConnectionsRepo.layer, ConnectionSessions.layer]))
}
