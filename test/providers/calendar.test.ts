/**
 * The `calendar` sandbox over real HTTP through the CalendarProvider port: seeded calendars and
 * events, windows, free/busy, creating and cancelling (idempotent), a read-only grant refused,
 * bookings and changes made in the provider pushed signed.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { CalendarProviderLayer } from "../../src/connections/providers/calendar/live.ts"
import { CalendarProvider } from "../../src/connections/providers/calendar/port.ts"
import { ProviderOAuthLayer } from "../../src/connections/providers/oauth/live.ts"
import { ProviderOAuth } from "../../src/connections/providers/oauth/port.ts"
import { CALENDAR_SEED_WEEK } from "../../sandbox/calendar.ts"
import { verifyCallback } from "../../src/connections/providers/signing.ts"
import { eventually } from "../support/eventually.ts"
import { callbackCatcher, LOOPBACK_CALLBACKS, sandboxControl, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { connectSandbox } from "../support/sandbox-kinds.ts"

const ports = Layer.merge(ProviderOAuthLayer, CalendarProviderLayer)

const patchState = (body: unknown) =>
  sandboxControl("calendar", "PATCH", "_state", body)

const week = { timeMin: CALENDAR_SEED_WEEK, timeMax: "2026-12-12T00:00:00.000Z" }

layer(serveAppOnOwnPort({ providers: LOOPBACK_CALLBACKS }), { timeout: "90 seconds", excludeTestServices: true })("sandbox calendar", (it) => {
  it.effect("seeded calendars and events in the seed week; free/busy matches the events", () =>
    Effect.gen(function*() {
      const calendar = yield* CalendarProvider
      const { session } = yield* connectSandbox("calendar")
      const calendars = yield* Stream.runCollect(calendar.calendars(session))
      assert.deepStrictEqual(calendars.map((c) => [c.id, c.primary]), [["cal_acct_0001_primary", true], ["cal_acct_0001_team", false]])
      const events = yield* Stream.runCollect(calendar.events(session, "cal_acct_0001_primary", week))
      assert.strictEqual(events.length, 4)
      assert.isTrue(events.every((e) => e.start >= week.timeMin && e.end <= week.timeMax && e.status === "confirmed"))
      assert.deepStrictEqual(events.map((e) => e.start), events.map((e) => e.start).toSorted())
      const busy = yield* calendar.freeBusy(session, week)
      assert.deepStrictEqual(Object.keys(busy).toSorted(), ["cal_acct_0001_primary", "cal_acct_0001_team"])
      assert.deepStrictEqual(busy["cal_acct_0001_primary"], events.map((e) => ({ start: e.start, end: e.end })))
      const outside = yield* Stream.runCollect(calendar.events(session, "cal_acct_0001_primary", { timeMin: "2027-01-01T00:00:00Z" }))
      assert.strictEqual(outside.length, 0)
      const state = yield* sandboxControl("calendar", "GET", "_state")
      for (const key of ["calendars", "events", "write_count"]) assert.property(state.json, key)
    }).pipe(Effect.provide(ports)))

  it.effect("creates an event (busy from then on), cancels it twice (one write), refuses a read-only grant and bad times", () =>
    Effect.gen(function*() {
      const calendar = yield* CalendarProvider
      const { session } = yield* connectSandbox("calendar")
      const before = (yield* sandboxControl("calendar", "GET", "_state")).json.write_count as number
      const slot = { start: "2026-12-14T10:00:00.000Z", end: "2026-12-14T10:30:00.000Z" }
      const created = yield* calendar.createEvent(session, "cal_acct_0001_team", { ...slot, summary: "Demo", attendees: ["lead@customer.example"] })
      assert.deepStrictEqual([created.summary, created.status, created.attendees[0]?.email], ["Demo", "confirmed", "lead@customer.example"])
      const window = { timeMin: "2026-12-14T00:00:00Z", timeMax: "2026-12-15T00:00:00Z" }
      assert.deepStrictEqual((yield* calendar.freeBusy(session, { ...window, calendarIds: ["cal_acct_0001_team"] }))["cal_acct_0001_team"], [slot])
      const cancelled = yield* calendar.cancelEvent(session, "cal_acct_0001_team", created.id)
      assert.strictEqual(cancelled.status, "cancelled")
      assert.strictEqual((yield* calendar.cancelEvent(session, "cal_acct_0001_team", created.id)).status, "cancelled")
      assert.deepStrictEqual((yield* calendar.freeBusy(session, { ...window, calendarIds: ["cal_acct_0001_team"] }))["cal_acct_0001_team"], [])
      assert.strictEqual((yield* sandboxControl("calendar", "GET", "_state")).json.write_count, before + 2)
      const backwards = yield* Effect.flip(calendar.createEvent(session, "cal_acct_0001_team", { start: slot.end, end: slot.start, summary: "x" }))
      assert.strictEqual(backwards._tag === "ProviderRefused" ? backwards.code : backwards._tag, "invalid_parameter")
      const foreign = yield* Effect.flip(calendar.createEvent(session, "cal_acct_0002_team", { ...slot, summary: "x" }))
      assert.strictEqual(foreign._tag === "ProviderRefused" ? foreign.status : foreign._tag, 404)
      const readOnly = yield* connectSandbox("calendar", "no_manage_ads_permission")
      const denied = yield* Effect.flip(calendar.createEvent(readOnly.session, "cal_acct_0001_team", { ...slot, summary: "x" }))
      assert.strictEqual(denied._tag, "ProviderPermissionMissing")
    }).pipe(Effect.provide(ports)))

  it.effect("creates and shares a calendar; moves an event; a cancelled event cannot be moved", () =>
    Effect.gen(function*() {
      const calendar = yield* CalendarProvider
      const { session } = yield* connectSandbox("calendar", "two_accounts", 1)
      const created = yield* calendar.createCalendar(session, { name: "Clinic rooms" })
      assert.deepStrictEqual([created.name, created.timezone, created.primary], ["Clinic rooms", "Europe/Lisbon", false])
      const shared = yield* calendar.shareCalendar(session, created.id, { email: "desk@clinic.example", role: "reader" })
      const again = yield* calendar.shareCalendar(session, created.id, { email: "desk@clinic.example", role: "writer" })
      assert.deepStrictEqual([shared.shared_with, again.shared_with], [[{ email: "desk@clinic.example", role: "reader" }], [{ email: "desk@clinic.example", role: "writer" }]])
      assert.includeMembers((yield* Stream.runCollect(calendar.calendars(session))).map((c) => c.id), [created.id])
      const event = yield* calendar.createEvent(session, created.id, { start: "2026-12-16T09:00:00Z", end: "2026-12-16T09:30:00Z", summary: "Room A" })
      const moved = yield* calendar.updateEvent(session, created.id, event.id, { start: "2026-12-16T11:00:00Z", end: "2026-12-16T11:30:00Z" })
      assert.deepStrictEqual([moved.start, moved.end, moved.summary], ["2026-12-16T11:00:00.000Z", "2026-12-16T11:30:00.000Z", "Room A"])
      yield* calendar.cancelEvent(session, created.id, event.id)
      const refused = yield* Effect.flip(calendar.updateEvent(session, created.id, event.id, { summary: "Room B" }))
      assert.strictEqual(refused._tag === "ProviderRefused" ? refused.code : refused._tag, "event_cancelled")
    }).pipe(Effect.provide(ports)))

  it.effect("a booking and a change made in the provider are pushed, signed", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const receiver = yield* callbackCatcher
      const { session } = yield* connectSandbox("calendar")
      yield* oauth.subscribe(session, receiver.url)
      const booked = yield* patchState({
        arrive: {
          kind: "event",
          calendar_id: "cal_acct_0001_primary",
          start: "2026-12-15T15:00:00Z",
          end: "2026-12-15T16:00:00Z",
          summary: "Booked by a guest",
          attendees: ["guest@customer.example"]
        }
      })
      assert.strictEqual(booked.status, 200)
      const eventId = booked.json.id as string
      yield* patchState({ arrive: { kind: "event_changed", event_id: eventId, start: "2026-12-15T17:00:00Z", end: "2026-12-15T18:00:00Z" } })
      yield* patchState({ arrive: { kind: "event_changed", event_id: eventId, status: "cancelled" } })
      yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 3, { what: "three pushes", within: "5 seconds" })
      const secret = sandboxSecretOf("calendar")
      assert.isTrue(receiver.received.every((push) => verifyCallback("calendar", secret, push.headers, push.body)))
      const payloads = receiver.received.map((push) => JSON.parse(push.body))
      assert.deepStrictEqual(payloads.map((p) => p.event), ["event.created", "event.updated", "event.cancelled"])
      assert.strictEqual(payloads[1].data.start, "2026-12-15T17:00:00.000Z")
      assert.strictEqual(new Set(payloads.map((p) => p.event_id)).size, 3)
      assert.strictEqual((yield* patchState({ arrive: { kind: "event_changed", event_id: "nosuch" } })).status, 404)
      assert.strictEqual((yield* patchState({ arrive: { kind: "event", start: "later", end: "never" } })).status, 400)
    }).pipe(Effect.provide(ports), Effect.scoped))
})
