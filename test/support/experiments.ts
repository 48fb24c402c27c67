/**
 * Experiment fixtures: conversions, customers and campaign credit written by SQL in bulk (their
 * routes are other contexts'), already credited so the attribution worker leaves them alone.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AnalyticsImports } from "../../src/analytics/imports/service.ts"
import { call } from "./app.ts"

export interface SeedConversion {
  readonly customerId: string | null
  /** An ISO instant. */
  readonly at: string
  readonly key: string
  readonly value: number | null
  readonly cash: boolean
  /** Credited in full to a touch of this campaign under last_touch. */
  readonly campaign?: string
}

/** Live customers of the profile; answers their ids. */
export const seedCustomers = Effect.fn("test.seedCustomers")(function*(profileId: string, count: number) {
  const sql = yield* SqlClient
  const ids = Array.from({ length: count }, () => crypto.randomUUID())
  yield* sql`INSERT INTO customers (id, profile_id) SELECT id, ${profileId} FROM unnest(${ids}::uuid[]) AS t(id)`
  return ids
})

/** Outcome events with their conversions (and, with `campaign`, a touch and a full last_touch credit). */
export const seedConversions = Effect.fn("test.seedConversions")(function*(profileId: string, rows: ReadonlyArray<SeedConversion>) {
  const sql = yield* SqlClient
  const ids = rows.map(() => crypto.randomUUID())
  const events = rows.map(() => crypto.randomUUID())
  // Text with "" for none: the driver cannot type an array of nulls only.
  const customers = rows.map((r) => r.customerId ?? "")
  const ats = rows.map((r) => r.at)
  const keys = rows.map((r) => r.key)
  const values = rows.map((r) => r.value === null ? null : String(r.value))
  const cash = rows.map((r) => r.cash)
  yield* sql`
    WITH e AS (
      INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, value_amount, customer_id)
      SELECT e, ${profileId}, e::text, 'h', k, a, v, NULLIF(c, '')::uuid
      FROM unnest(${events}::uuid[], ${keys}::text[], ${ats}::timestamptz[], ${values}::numeric[], ${customers}::text[]) AS t(e, k, a, v, c)
      RETURNING profile_id, idempotency_key, id, occurred_at)
    INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
  yield* sql`
    INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, value_amount, customer_id,
                             counts_as_cash, attribution_eligible)
    SELECT i, ${profileId}, e, k, a, v, NULLIF(c, '')::uuid, s, true
    FROM unnest(${ids}::uuid[], ${events}::uuid[], ${keys}::text[], ${ats}::timestamptz[], ${values}::numeric[],
                ${customers}::text[], ${cash}::boolean[]) AS t(i, e, k, a, v, c, s)`
  // Credited already (its rows are written by hand): out of the credit queue, so the worker leaves it.
  yield* sql`DELETE FROM credit_queue WHERE profile_id = ${profileId} AND conversion_id = ANY(${ids}::uuid[])`
  const credited = rows.flatMap((r, i) => r.campaign === undefined ? [] : [{ id: ids[i] ?? "", at: r.at, campaign: r.campaign }])
  if (credited.length > 0) {
    const touches = credited.map(() => crypto.randomUUID())
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, campaign_external_id)
      SELECT t, ${profileId}, 'web_touch', a - interval '1 hour', 'paid_social', c
      FROM unnest(${touches}::uuid[], ${credited.map((c) => c.at)}::timestamptz[], ${credited.map((c) => c.campaign)}::text[]) AS x(t, a, c)`
    yield* sql`
      INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share, is_credited,
                                       in_window)
      SELECT ${profileId}, v, a, 'last_touch', t, a - interval '1 hour', 0, 1, true, true
      FROM unnest(${credited.map((c) => c.id)}::uuid[], ${credited.map((c) => c.at)}::timestamptz[], ${touches}::uuid[]) AS x(v, a, t)`
  }
  return ids
})

/** The UTC date `days` from today (negative: before). */
export const dayFromToday = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)

/** Noon (UTC) of a date plus `minutes`, as an ISO instant. */
export const noonOf = (date: string, minutes = 0) => new Date(Date.parse(`${date}T12:00:00Z`) + minutes * 60_000).toISOString()

/** An experiment's salt (not on the wire: the tests recompute each customer's group). */
export const saltOf = (profileId: string, id: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ salt: string }>`SELECT salt FROM experiments WHERE profile_id = ${profileId} AND id = ${id}`,
      (rows) => rows[0]?.salt ?? ""
    ))

/** A usable ad-platform connection holding the manage-ads grant (what a switchback's start asks for). */
export const seedAdConnection = (profileId: string, scopes: ReadonlyArray<string> = ["ads_management", "ads_read"]) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql`INSERT INTO connections (id, profile_id, provider, provider_kind, external_account_id, display_name, scopes)
        VALUES (${crypto.randomUUID()}, ${profileId}, 'adplatform', 'adplatform', ${`act_${profileId.slice(0, 8)}`}, 'Ads', ${[...scopes]}::text[])`)

/** The pre/post fixture's days: 28 before the change on cmp_t, 14 after (the experiment's window). */
export const PRE_POST_DAYS = 42

/**
 * Day `i` of the pre/post fixture: two donor campaigns with weekly shapes and the target near
 * their mean, +10 a day from day 28 (the change). Even donor counts keep the target whole, the
 * scale a simplex-weighted control reaches.
 */
export const prePostDay = (i: number) => {
  const a = 10 + (i % 7) * 4
  const b = 12 + ((i * 3) % 5) * 2
  return { a, b, t: (a + b) / 2 + ((i * 5) % 3) - 1 + (i >= 28 ? 10 : 0) }
}

/** The campaigns of a fixture day with their amounts: the target cmp_t and donors cmp_1, cmp_2. */
export const prePostCampaigns = (day: { readonly a: number; readonly b: number; readonly t: number }) =>
  [["cmp_t", day.t], ["cmp_1", day.a], ["cmp_2", day.b]] as const

/** The create body of the fixture's pre/post on cmp_t: its window the last 14 days, 28 pre days. */
export const prePostBody = (measure: "count" | "value") => ({
  name: "Creative change on cmp_t",
  kind: "pre_post",
  metric: { conversion_key: "purchase", measure },
  window: { start: dayFromToday(-14), end: dayFromToday(-1) },
  target: { level: "campaign", id: "cmp_t" },
  pre_days: 28
})

/** Spend rows of one campaign (two ads, so a day's spend is a sum), in `currency`. */
export const spendRows = (profileId: string, campaign: string, perDay: ReadonlyArray<readonly [string, number]>, currency = "USD") =>
  Effect.flatMap(AnalyticsImports, (imports) =>
    imports.upsertSpend(perDay.flatMap(([day, amount]) =>
      [0, 1].map((ad) => ({
        profileId,
        platform: "meta",
        day,
        campaignId: campaign,
        adSetId: null,
        adId: `${campaign}_ad${ad}`,
        currency,
        amount: String(amount / 2)
      }))
    )))

/**
 * A completed pre_post on campaign `cmp_t` (count of `purchase`, last_touch credit) whose
 * synthetic control finds about +10 a day: a calibration source. Created and started through the
 * API with `key` (analytics:read, campaigns:apply); answers the experiment's id.
 */
export const seedCompletedPrePost = Effect.fn("test.seedCompletedPrePost")(function*(profileId: string, key: string) {
  const rows: Array<SeedConversion> = []
  for (let i = 0; i < PRE_POST_DAYS; i++) {
    const date = dayFromToday(-PRE_POST_DAYS + i)
    for (const [campaign, n] of prePostCampaigns(prePostDay(i))) {
      for (let k = 0; k < n; k++) rows.push({ customerId: null, at: noonOf(date, k), key: "purchase", value: 5, cash: false, campaign })
    }
  }
  yield* seedConversions(profileId, rows)
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  const created = yield* call("/api/v1/experiments", { method: "POST", headers, body: JSON.stringify(prePostBody("count")) })
  if (created.status !== 201) return yield* Effect.die(`create: ${created.status} ${created.text}`)
  const id: string = created.json.data.id
  const started = yield* call(`/api/v1/experiments/${id}/start`, { method: "POST", headers: { authorization: `Bearer ${key}` } })
  if (started.status !== 200) return yield* Effect.die(`start: ${started.status} ${started.text}`)
  // Its window is over: the read completes it.
  const read = yield* call(`/api/v1/experiments/${id}`, { headers: { authorization: `Bearer ${key}` } })
  if (read.json.data.status !== "completed") return yield* Effect.die(`not completed: ${read.text}`)
  return id
})
