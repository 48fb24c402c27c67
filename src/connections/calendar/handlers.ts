import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { Calendars } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { CalendarApi } from "./api.ts"

export const CalendarHandlers = HttpApiBuilder.group(groupApi(CalendarApi), "calendar", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const calendars = yield* Calendars
    const data = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.map(effect, (item) => ({ data: item }))
    return handlers.handleAll({
      listCalendars: ({ query }) => Effect.flatMap(access.current, (profile) => calendars.list(profile, query)),
      createCalendar: ({ payload }) => Effect.flatMap(access.current, (profile) => data(calendars.create(profile, payload))),
      shareCalendar: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(calendars.share(profile, params.calendarId, payload))),
      listEvents: ({ params, query }) => Effect.flatMap(access.current, (profile) => calendars.events(profile, params.calendarId, query)),
      createEvent: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(calendars.createEvent(profile, params.calendarId, payload))),
      updateEvent: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(calendars.updateEvent(profile, params.calendarId, params.eventId, payload))),
      cancelEvent: ({ params }) =>
        Effect.flatMap(access.current, (profile) => data(calendars.cancelEvent(profile, params.calendarId, params.eventId)))
    })
  })).pipe(Layer.provide([Calendars.layer, ProfileAccess.layer]))
