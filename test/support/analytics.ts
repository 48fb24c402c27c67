/**
 * Analytics fixtures: a profile with time zone, currencies and a key; touches, conversions and
 * credit rows written by SQL (their routes are other domains'); the app with the attribution worker
 * off, since the fixtures write the credit rows themselves.
 */
import { assert } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AnalyticsImports } from "../../src/analytics/imports/service.ts"
import { AnalyticsRollups } from "../../src/analytics/rollups/repo.ts"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, serveApp, testSettings } from "./app.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "./tenancy.ts"

/** GET with a bearer key and an optional query string. */
export const get = (key: string, path: string, query: Record<string, string> = {}) => {
  const search = new URLSearchParams(query).toString()
  return call(`${path}${search === "" ? "" : `?${search}`}`, { headers: { authorization: `Bearer ${key}` } })
}

export interface AnalyticsProfile extends SeededProfile {
  readonly key: string
}

export interface AnalyticsProfileOptions {
  /** Default UTC. */
  readonly timeZone?: string
  readonly currency?: string | null
  /** The workspace's. */
  readonly reportingCurrency?: string | null
}

/** A profile with its time zone and currencies, and a key with these scopes (high rate limit). */
export const seedAnalyticsProfile = Effect.fn("test.seedAnalyticsProfile")(function*(
  scopes: ReadonlyArray<string>,
  options: AnalyticsProfileOptions = {}
) {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  yield* sql`
    UPDATE profiles SET time_zone = ${options.timeZone ?? "UTC"}, currency = ${options.currency ?? null} WHERE id = ${profile.profileId}`
  yield* sql`UPDATE workspaces SET reporting_currency = ${options.reportingCurrency ?? null} WHERE id = ${profile.workspaceId}`
  const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies AnalyticsProfile
})

export interface TouchInput {
  /** An ISO instant, or an SQL interval before now ("-2 minutes"). */
  readonly at: string
  readonly channel: string
  /** Default web_touch. */
  readonly kind?: string
  /** Default tracker. */
  readonly sourceSystem?: string
  readonly campaign?: string | null
  readonly campaignName?: string | null
  readonly adSet?: string | null
  readonly adSetName?: string | null
  readonly ad?: string | null
  readonly adName?: string | null
  readonly country?: string | null
  readonly device?: string | null
  readonly browser?: string | null
  readonly os?: string | null
  readonly referrer?: string | null
  readonly page?: string | null
  /** The payload's UTM parameters. */
  readonly utm?: Record<string, string>
  /** Shorthand for utm_term. */
  readonly keyword?: string | null
  readonly clickIdKind?: string | null
  readonly clickId?: string | null
  readonly anonymousId?: string | null
  readonly sessionId?: string | null
  readonly customerId?: string | null
  readonly joinMethod?: string | null
  readonly url?: string | null
  readonly source?: string | null
  readonly medium?: string | null
}

/** A touch written by SQL; returns its id. */
export const insertTouch = Effect.fn("test.insertTouch")(function*(profileId: string, t: TouchInput) {
  const sql = yield* SqlClient
  const id = crypto.randomUUID()
  const utm = t.keyword === undefined || t.keyword === null ? t.utm : { ...t.utm, utm_term: t.keyword }
  const payload = utm === undefined ? {} : { utm }
  const at = t.at.startsWith("-") ? sql`now() - ${t.at.slice(1)}::interval` : sql`${t.at}::timestamptz`
  yield* sql`
    INSERT INTO touches (id, profile_id, kind, occurred_at, source_system, channel, source, medium, campaign_external_id, campaign_name,
                         ad_set_external_id, ad_set_name, ad_external_id, ad_name, country, device, browser, os, referrer_domain, path,
                         payload, click_id_kind, click_id, anonymous_id, session_id, customer_id, join_method, url)
    VALUES (${id}, ${profileId}, ${t.kind ?? "web_touch"}, ${at}, ${t.sourceSystem ?? "tracker"}, ${t.channel}, ${t.source ?? null},
            ${t.medium ?? null}, ${t.campaign ?? null}, ${t.campaignName ?? null}, ${t.adSet ?? null}, ${t.adSetName ?? null},
            ${t.ad ?? null}, ${t.adName ?? null}, ${t.country ?? null}, ${t.device ?? null}, ${t.browser ?? null}, ${t.os ?? null},
            ${t.referrer ?? null}, ${t.page ?? null}, ${JSON.stringify(payload)}::jsonb, ${t.clickIdKind ?? null}, ${t.clickId ?? null},
            ${t.anonymousId ?? null}, ${t.sessionId ?? null}, ${t.customerId ?? null}, ${t.joinMethod ?? null}, ${t.url ?? null})`
  return id
})

export interface ConversionInput {
  readonly at: string
  readonly key: string
  readonly value?: string | null
  readonly currency?: string | null
  readonly cash?: boolean
  readonly first?: boolean | null
  /** A recorded manual refund of this amount. */
  readonly refund?: string
}

/** An outcome event and its conversion, attribution-eligible and already credited (no worker picks it up). */
export const insertConversion = Effect.fn("test.insertConversion")(function*(profileId: string, c: ConversionInput) {
  const sql = yield* SqlClient
  const eventId = crypto.randomUUID()
  const id = crypto.randomUUID()
  yield* sql`
    WITH e AS (
      INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, value_amount, currency)
      VALUES (${eventId}, ${profileId}, ${eventId}, 'h', ${c.key}, ${c.at}::timestamptz, ${c.value ?? null}::numeric, ${c.currency ?? null})
      RETURNING profile_id, idempotency_key, id, occurred_at)
    INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
  yield* sql`
    INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, value_amount, currency, counts_as_cash,
                             attribution_eligible, is_first_payment, refund_amount, refunded_at)
    VALUES (${id}, ${profileId}, ${eventId}, ${c.key}, ${c.at}::timestamptz, ${c.value ?? null}::numeric, ${c.currency ?? null},
            ${c.cash ?? false}, true, ${c.first ?? null}, ${c.refund ?? null}::numeric,
            ${c.refund === undefined ? null : new Date()})`
  // Credited already (its rows are written by hand): out of the credit queue, so the worker leaves it.
  yield* sql`DELETE FROM credit_queue WHERE profile_id = ${profileId} AND conversion_id = ${id}`
  return { id, eventId }
})

/** One credit row, in window; credited when the share is above zero. */
export const credit = (conversionId: string, model: string, touchId: string, share: string, position = 0) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql`
      INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share, is_credited,
                                       in_window)
      SELECT c.profile_id, c.id, c.occurred_at, ${model}, t.id, t.occurred_at, ${position}, ${share}::numeric, ${Number(share) > 0}, true
      FROM conversions c JOIN touches t ON t.id = ${touchId} WHERE c.id = ${conversionId}`)

/** Brings the rollups up to date (waits for the background job if it is draining). */
export const drain = Effect.flatMap(AnalyticsRollups, (rollups) => rollups.drain)

/**
 * An analytics answer with its `meta.as_of` checked to be there and then blanked: two reads of
 * the same figures may differ in it alone, since the rollups move on between them.
 */
export const sansAsOf = <B extends { readonly meta?: { readonly as_of?: unknown } }>(body: B) => {
  assert.isString(body.meta?.as_of)
  return { ...body, meta: { ...body.meta, as_of: "checked" } }
}

/** Makes the profile a connect-broker one (provisioned by a partner app); returns a new key with these scopes. */
export const connectBroker = Effect.fn("test.connectBroker")(function*(profile: SeededProfile, scopes: ReadonlyArray<string>) {
  const sql = yield* SqlClient
  const appId = crypto.randomUUID()
  yield* sql`
    INSERT INTO oauth_apps (id, name, client_id, client_secret_hash, jwt_secret_encrypted)
    VALUES (${appId}, 'Partner', ${`client-${appId}`}, 'x', 'x')`
  yield* sql`UPDATE profiles SET provisioned_by_app_id = ${appId} WHERE id = ${profile.profileId}`
  const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 10_000 })
  return key
})

/** The fixtures write credit rows themselves: the background worker must not credit the same conversions meanwhile. */
const workerOff = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

/** The served app with the attribution worker off, plus AnalyticsImports for spend and FX rates. */
export const analyticsApp = AnalyticsImports.layer.pipe(Layer.provideMerge(serveApp(testSettings()).pipe(Layer.provide(workerOff))))
