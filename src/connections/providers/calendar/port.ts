/**
 * A calendar provider as the service needs it: the account's calendars, their events, free/busy
 * over a window, creating and cancelling events. Changes made in the provider (a guest moves or
 * cancels) arrive as signed callbacks on `/hooks/calendar`.
 */
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"

export interface Calendar {
  readonly id: string
  readonly name: string
  readonly timezone: string
  readonly primary: boolean
  readonly shared_with: ReadonlyArray<{ readonly email: string; readonly role: "reader" | "writer" }>
}

export interface CalendarAttendee {
  readonly email: string
  readonly response_status: "needsAction" | "accepted" | "declined" | "tentative"
}

export interface CalendarEvent {
  readonly id: string
  readonly calendar_id: string
  /** ISO 8601 instants. */
  readonly start: string
  readonly end: string
  readonly summary: string
  readonly attendees: ReadonlyArray<CalendarAttendee>
  readonly status: "confirmed" | "cancelled"
  readonly updated_at: string
}

export interface BusyInterval {
  readonly start: string
  readonly end: string
}

export class CalendarProvider extends Context.Service<CalendarProvider, {
  readonly calendars: (session: ProviderSession) => Stream.Stream<Calendar, ProviderError>
  /** Confirmed events overlapping the window (both ends optional), by start. */
  readonly events: (
    session: ProviderSession,
    calendarId: string,
    window?: { readonly timeMin?: string; readonly timeMax?: string }
  ) => Stream.Stream<CalendarEvent, ProviderError>
  /** Busy intervals per calendar (every calendar of the account unless `calendarIds`). */
  readonly freeBusy: (
    session: ProviderSession,
    request: { readonly timeMin: string; readonly timeMax: string; readonly calendarIds?: ReadonlyArray<string> }
  ) => Effect.Effect<Readonly<Record<string, ReadonlyArray<BusyInterval>>>, ProviderError>
  readonly createEvent: (
    session: ProviderSession,
    calendarId: string,
    event: {
      readonly start: string
      readonly end: string
      readonly summary: string
      readonly attendees?: ReadonlyArray<string>
    }
  ) => Effect.Effect<CalendarEvent, ProviderError>
  readonly createCalendar: (
    session: ProviderSession,
    calendar: { readonly name: string; readonly timezone?: string }
  ) => Effect.Effect<Calendar, ProviderError>
  /** Sharing again with the same address changes the role. */
  readonly shareCalendar: (
    session: ProviderSession,
    calendarId: string,
    grant: { readonly email: string; readonly role: "reader" | "writer" }
  ) => Effect.Effect<Calendar, ProviderError>
  /** Moves or edits an event; a cancelled one is refused (`ProviderRefused` `event_cancelled`). */
  readonly updateEvent: (
    session: ProviderSession,
    calendarId: string,
    eventId: string,
    change: {
      readonly start?: string
      readonly end?: string
      readonly summary?: string
      readonly attendees?: ReadonlyArray<string>
    }
  ) => Effect.Effect<CalendarEvent, ProviderError>
  /** Cancelling an already cancelled event answers it unchanged. */
  readonly cancelEvent: (session: ProviderSession, calendarId: string, eventId: string) => Effect.Effect<CalendarEvent, ProviderError>
}>()("svc/CalendarProvider") {}
