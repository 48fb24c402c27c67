/** Server-side event fixtures: a profile with an events key, conversion definitions by SQL, and the three routes. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call } from "./app.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "./tenancy.ts"

export interface EventsFixture extends SeededProfile {
  /** `events:write` and `conversions:read`, a high rate limit (tests send bursts). */
  readonly key: string
}

export const ALL_SCOPES = ["events:write", "conversions:read"] as const

export const seedEventsProfile = Effect.fn("test.seedEventsProfile")(function*(
  scopes: ReadonlyArray<string> = ALL_SCOPES
) {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies EventsFixture
})

export interface DefinitionOptions {
  readonly countsAsCash?: boolean
  readonly isDefault?: boolean
  /** ISO time; default now. */
  readonly createdAt?: string
  readonly kind?: "event" | "pipeline_stage"
}

/** A conversion definition written by SQL (the definitions routes belong to another domain). */
export const defineConversion = Effect.fn("test.defineConversion")(function*(
  profileId: string,
  conversionKey: string,
  eventNames: ReadonlyArray<string>,
  options: DefinitionOptions = {}
) {
  const sql = yield* SqlClient
  const id = crypto.randomUUID()
  yield* sql`
    INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, counts_as_cash, is_default, created_at)
    VALUES (${id}, ${profileId}, ${conversionKey}, ${conversionKey}, ${options.kind ?? "event"}, ${eventNames},
            ${options.countsAsCash ?? false}, ${options.isDefault ?? false},
            COALESCE(${options.createdAt ?? null}::timestamptz, now()))`
  return id
})

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** POST /api/v1/events with an object body, or a raw JSON text (to keep a number's literal). */
export const ingest = (key: string, body: unknown, query = "") =>
  call(`/api/v1/events${query}`, {
    method: "POST",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

export const retract = (key: string, body: unknown) =>
  call("/api/v1/events/retractions", {
    method: "POST",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: JSON.stringify(body)
  })

export const listConversions = (key: string, query: Record<string, string> = {}) => {
  const search = new URLSearchParams(query).toString()
  return call(`/api/v1/conversions${search === "" ? "" : `?${search}`}`, { headers: bearer(key) })
}

/** Row counts of everything an ingest or a retraction writes, for one profile. */
export const eventTables = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{
      events: number
      conversions: number
      customers: number
      identifiers: number
      outbox: number
      jobs: number
      audits: number
    }>`
      SELECT (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${profileId}) AS events,
             (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId}) AS conversions,
             (SELECT count(*)::int FROM customers WHERE profile_id = ${profileId}) AS customers,
             (SELECT count(*)::int FROM customer_identifiers WHERE profile_id = ${profileId}) AS identifiers,
             (SELECT count(*)::int FROM outbox WHERE profile_id = ${profileId}) AS outbox,
             (SELECT count(*)::int FROM work_jobs WHERE profile_id = ${profileId}) AS jobs,
             (SELECT count(*)::int FROM audit_events WHERE profile_id = ${profileId} AND action = 'event.retracted') AS audits`
    return row
  })

/** `is_first_payment` of the conversion an event became. */
export const firstPaymentOf = (outcomeEventId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ flag: boolean | null }>`
      SELECT is_first_payment AS flag FROM conversions WHERE outcome_event_id = ${outcomeEventId}`
    if (rows.length !== 1) return yield* Effect.die(`no single conversion for ${outcomeEventId}`)
    return rows[0]?.flag ?? null
  })
