/**
 * Calendars and events (routes.tsv Calendar, decision 0080) over real HTTP against the calendar
 * sandbox the app serves: connected through the real hand-off, proxied live (a change at the
 * provider shows at once), the three scopes, 404 for what the connected account does not hold,
 * bad input refused before the provider is called, the PII access log.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call } from "../support/app.ts"
import { bearer, channelProfile, connectChannel, narrowKey, piiRows, sandbox } from "../support/channels.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"

const ALL = ["calendar.read", "calendar", "calendar.manage"]

interface CalendarItem {
  readonly id: string
  readonly name: string
  readonly primary: boolean
  readonly shared_with: ReadonlyArray<{ email: string; role: string }>
}

/** The write count of the key's profile's calendar sandbox world (decision 0109). */
const writeCount = (key: string) => Effect.map(sandbox(key, "calendar", "GET", "_state"), (state) => {
  assert.strictEqual(state.status, 200, state.text)
  return state.json.write_count as number
})

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("calendar", (it) => {
  it.effect("lists the account's calendars live, creates one (201) and shares it; sharing again changes the role", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(ALL)
      yield* connectChannel(key, "calendar")
      const listed = yield* call("/api/v1/calendars", bearer(key))
      assert.strictEqual(listed.status, 200, listed.text)
      const calendars: ReadonlyArray<CalendarItem> = listed.json.data
      assert.isTrue(calendars.some((c) => c.primary), listed.text)
      assert.hasAllKeys(calendars[0], ["id", "name", "timezone", "primary", "shared_with"])

      const created = yield* call("/api/v1/calendars", bearer(key, "POST", { name: "Consultations", timezone: "Europe/Madrid" }))
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.json.data.name, "Consultations")
      assert.strictEqual(created.json.data.timezone, "Europe/Madrid")
      const id: string = created.json.data.id
      const again = yield* call("/api/v1/calendars?limit=100", bearer(key))
      assert.isTrue(again.json.data.some((c: CalendarItem) => c.id === id), "a created calendar is read back from the provider")

      const shared = yield* call(`/api/v1/calendars/${id}/share`, bearer(key, "POST", { email: "Assistant@Clinic.example" }))
      assert.strictEqual(shared.status, 200, shared.text)
      assert.deepStrictEqual(shared.json.data.shared_with, [{ email: "assistant@clinic.example", role: "reader" }])
      const promoted = yield* call(`/api/v1/calendars/${id}/share`, bearer(key, "POST", { email: "assistant@clinic.example", role: "writer" }))
      assert.strictEqual(promoted.status, 200, promoted.text)
      assert.deepStrictEqual(promoted.json.data.shared_with, [{ email: "assistant@clinic.example", role: "writer" }])

      // Attendee and share addresses are personal data: each call is logged.
      const rows = yield* piiRows(profile)
      assert.includeDeepMembers(rows.map((r) => [r.route, r.result]), [
        ["GET /api/v1/calendars", "allowed"],
        ["POST /api/v1/calendars", "allowed"],
        ["POST /api/v1/calendars/:calendarId/share", "allowed"]
      ])
    }))

  it.effect("events: create (201), read live, move, cancel; a cancelled event cannot be moved (409); cancelling again is the same", () =>
    Effect.gen(function*() {
      const { key } = yield* channelProfile(ALL)
      const connection = yield* connectChannel(key, "calendar")
      const calendarId = `${connection.provider_account_id}_team`
      const start = "2027-03-01T10:00:00Z"
      const created = yield* call(`/api/v1/calendars/${calendarId}/events`, bearer(key, "POST", {
        start,
        end: "2027-03-01T11:00:00+00:00",
        summary: "First visit",
        attendees: ["patient@customer.example"]
      }))
      assert.strictEqual(created.status, 201, created.text)
      const event = created.json.data
      assert.strictEqual(event.calendar_id, calendarId)
      assert.strictEqual(event.status, "confirmed")
      assert.deepStrictEqual(event.attendees, [{ email: "patient@customer.example", response_status: "needsAction" }])

      const window = `time_min=2027-03-01&time_max=${encodeURIComponent("2027-03-02T00:00:00Z")}`
      const listed = yield* call(`/api/v1/calendars/${calendarId}/events?${window}`, bearer(key))
      assert.strictEqual(listed.status, 200, listed.text)
      assert.deepStrictEqual(listed.json.data.map((e: { id: string }) => e.id), [event.id])

      // Changed at the provider behind the service's back: the read shows it at once (no copy).
      const renamed = yield* sandbox(key, "calendar", "PATCH", "_state", { objects: [{ id: event.id, summary: "Renamed at the provider" }] })
      assert.strictEqual(renamed.status, 200, renamed.text)
      const live = yield* call(`/api/v1/calendars/${calendarId}/events?${window}`, bearer(key))
      assert.strictEqual(live.json.data[0].summary, "Renamed at the provider")

      const moved = yield* call(`/api/v1/calendars/${calendarId}/events/${event.id}`, bearer(key, "PATCH", {
        start: "2027-03-01T12:00:00Z",
        end: "2027-03-01T13:00:00Z"
      }))
      assert.strictEqual(moved.status, 200, moved.text)
      assert.strictEqual(moved.json.data.start, "2027-03-01T12:00:00.000Z")

      const cancelled = yield* call(`/api/v1/calendars/${calendarId}/events/${event.id}`, bearer(key, "DELETE"))
      assert.strictEqual(cancelled.status, 200, cancelled.text)
      assert.strictEqual(cancelled.json.data.status, "cancelled")
      const twice = yield* call(`/api/v1/calendars/${calendarId}/events/${event.id}`, bearer(key, "DELETE"))
      assert.strictEqual(twice.status, 200, twice.text)
      assert.strictEqual(twice.json.data.status, "cancelled")

      const refused = yield* call(`/api/v1/calendars/${calendarId}/events/${event.id}`, bearer(key, "PATCH", { summary: "Again" }))
      assert.strictEqual(refused.status, 409, refused.text)
      assert.strictEqual(refused.json.error.code, "invalid_state")
      assert.strictEqual(refused.json.error.reason, "event_cancelled")
      const after = yield* call(`/api/v1/calendars/${calendarId}/events?${window}`, bearer(key))
      assert.deepStrictEqual(after.json.data, [])
    }))

  it.effect("each route needs the scope the spec names: 403 insufficient_scope, and nothing reaches the provider", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(ALL)
      const connection = yield* connectChannel(key, "calendar")
      const calendarId = `${connection.provider_account_id}_primary`
      const reader = yield* narrowKey(profile, ["calendar.read"])
      const writer = yield* narrowKey(profile, ["calendar"])
      const before = yield* writeCount(key)

      assert.strictEqual((yield* call("/api/v1/calendars", bearer(reader))).status, 200)
      assert.strictEqual((yield* call(`/api/v1/calendars/${calendarId}/events`, bearer(reader))).status, 200)
      const body = { start: "2027-04-01T10:00:00Z", end: "2027-04-01T11:00:00Z", summary: "x" }
      for (
        const [k, method, path, payload] of [
          [reader, "POST", `/api/v1/calendars/${calendarId}/events`, body],
          [reader, "POST", "/api/v1/calendars", { name: "n" }],
          [writer, "POST", "/api/v1/calendars", { name: "n" }],
          [writer, "POST", `/api/v1/calendars/${calendarId}/share`, { email: "a@b.example" }],
          [writer, "GET", "/api/v1/calendars", undefined],
          [reader, "DELETE", `/api/v1/calendars/${calendarId}/events/cal_evt_1`, undefined]
        ] as const
      ) {
        const refused = yield* call(path, bearer(k, method, payload))
        assert.strictEqual(refused.status, 403, `${method} ${path}: ${refused.text}`)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
      }
      assert.strictEqual(yield* writeCount(key), before)
    }))

  it.effect("a calendar or event the connected account does not hold is 404; no connection is 409", () =>
    Effect.gen(function*() {
      const { key } = yield* channelProfile(ALL)
      const none = yield* call("/api/v1/calendars", bearer(key))
      assert.strictEqual(none.status, 409, none.text)
      assert.strictEqual(none.json.error.code, "invalid_state")
      assert.strictEqual(none.json.error.reason, "calendar_connection_required")

      const connection = yield* connectChannel(key, "calendar")
      assert.strictEqual(connection.provider_account_id, "cal_acct_0001")
      // Another account's calendar exists at the provider, but not for this grant.
      for (const path of ["/api/v1/calendars/cal_acct_0002_primary/events", "/api/v1/calendars/no-such-calendar/events"]) {
        const missing = yield* call(path, bearer(key))
        assert.strictEqual(missing.status, 404, missing.text)
        assert.strictEqual(missing.json.error.code, "not_found")
      }
      const foreignShare = yield* call("/api/v1/calendars/cal_acct_0002_team/share", bearer(key, "POST", { email: "a@b.example" }))
      assert.strictEqual(foreignShare.status, 404, foreignShare.text)
      const missingEvent = yield* call("/api/v1/calendars/cal_acct_0001_primary/events/cal_evt_nope", bearer(key, "PATCH", { summary: "x" }))
      assert.strictEqual(missingEvent.status, 404, missingEvent.text)
    }))

  it.effect("bad input is a 400 validation_error and changes nothing at the provider; never a 5xx", () =>
    Effect.gen(function*() {
      const { key } = yield* channelProfile(ALL)
      yield* connectChannel(key, "calendar")
      const before = yield* writeCount(key)
      const events = "/api/v1/calendars/cal_acct_0001_primary/events"
      const bad: ReadonlyArray<readonly [string, string, unknown]> = [
        ["POST", events, { start: "2027-01-01T11:00:00Z", end: "2027-01-01T10:00:00Z", summary: "backwards" }],
        ["POST", events, { start: "tomorrow", end: "2027-01-01T10:00:00Z", summary: "x" }],
        ["POST", events, { start: "2027-01-01T10:00:00Z", end: "2027-01-01T11:00:00Z", summary: "   " }],
        ["POST", events, { start: "2027-01-01T10:00:00Z", end: "2027-01-01T11:00:00Z", summary: "x", attendees: ["not-an-email"] }],
        ["POST", events, { start: "2027-01-01T10:00:00Z", end: "2027-01-01T11:00:00Z", summary: "x", colour: "red" }],
        ["PATCH", `${events}/cal_evt_1`, {}],
        ["POST", "/api/v1/calendars", { name: "x", timezone: "Mars/Olympus" }],
        ["POST", "/api/v1/calendars", {}],
        ["POST", "/api/v1/calendars/cal_acct_0001_primary/share", { email: "a@b.example", role: "owner" }],
        ["GET", `${events}?time_min=2027-02-01&time_max=2027-01-01`, undefined],
        ["GET", `${events}?limit=0`, undefined]
      ]
      for (const [method, path, body] of bad) {
        const answer = yield* call(path, bearer(key, method, body))
        assert.strictEqual(answer.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${answer.text}`)
        assert.oneOf(answer.json.error.code, ["validation_error", "invalid_parameter"])
      }
      const cursor = yield* call(`${events}?cursor=bm90LWFuLWlk`, bearer(key))
      assert.strictEqual(cursor.status, 400, cursor.text)
      assert.strictEqual(cursor.json.error.code, "invalid_parameter")
      assert.strictEqual(yield* writeCount(key), before)
    }))
})
