/**
 * The owner of `ad_campaigns`, `ad_sets` and `ads` (decision 0033, 0058): the synced copy of an
 * ad account's structure, upserted in batches keyed (profile_id, platform_id). A batch is one
 * statement; an ad set whose campaign (or an ad whose ad set) is not in the copy yet is left out
 * and counted, since the parent is synced first and the next sync brings the child.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { Ad, AdCampaign, AdSet } from "../../connections/providers/adplatform/port.ts"
import { atDatabaseBoundary, decodeFirstRow } from "../../platform/database.ts"

export interface StructureScope {
  readonly profileId: string
  readonly connectionId: string
  /** The ad account's currency (budgets are in its minor units); null when the provider did not say. */
  readonly currency: string | null
}

/** `int8[]` parameters travel as strings: budgets may exceed 2^31 minor units. */
const bigints = (values: ReadonlyArray<number | null>): ReadonlyArray<string | null> | string => {
  const texts = values.map((value) => value === null ? null : String(Math.trunc(value)))
  return texts.length > 0 && texts.every((value) => value === null) ? `{${texts.map(() => "NULL").join(",")}}` : texts
}

const texts = (values: ReadonlyArray<string | null>): ReadonlyArray<string | null> | string =>
  values.length > 0 && values.every((value) => value === null) ? `{${values.map(() => "NULL").join(",")}}` : values

const Written = Schema.Struct({ n: Schema.Int })

export class StructureRepo extends Context.Service<StructureRepo, {
  /** Upserts campaigns; answers how many were written. */
  readonly upsertCampaigns: (scope: StructureScope, rows: ReadonlyArray<AdCampaign>) => Effect.Effect<number, DatabaseUnavailable>
  /** Upserts ad sets under their synced campaigns; answers how many were written. */
  readonly upsertAdSets: (scope: StructureScope, rows: ReadonlyArray<AdSet>) => Effect.Effect<number, DatabaseUnavailable>
  /** Upserts ads (with their creative and greeting fields) under their synced ad sets; answers how many were written. */
  readonly upsertAds: (scope: StructureScope, rows: ReadonlyArray<Ad>) => Effect.Effect<number, DatabaseUnavailable>
  /** Deletes the profile's synced structure (archiving it: non-audit data goes). */
  readonly deleteForProfile: (profileId: string) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/StructureRepo") {
  static readonly layer = Layer.effect(StructureRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const written = decodeFirstRow(Written)
      const count = <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
        Effect.map(written(statement), (row) => row._tag === "Some" ? row.value.n : 0)

      const upsertCampaigns = (scope: StructureScope, page: ReadonlyArray<AdCampaign>) => {
        const rows = lastPerId(page)
        return rows.length === 0 ? Effect.succeed(0) : count(sql`
          WITH upserted AS (
            INSERT INTO ad_campaigns (id, profile_id, connection_id, platform_id, name, status, objective, currency,
                                      daily_budget_minor, lifetime_budget_minor, synced_at)
            SELECT gen_random_uuid(), ${scope.profileId}, ${scope.connectionId}, v.platform_id, v.name, v.status, v.objective,
                   ${scope.currency}, v.daily, v.lifetime, now()
            FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.status)}::text[],
                        ${texts(rows.map((r) => r.objective))}::text[], ${bigints(rows.map((r) => r.daily_budget_minor))}::bigint[],
                        ${bigints(rows.map((r) => r.lifetime_budget_minor))}::bigint[])
                 AS v(platform_id, name, status, objective, daily, lifetime)
            ON CONFLICT (profile_id, platform_id) DO UPDATE
            SET connection_id = EXCLUDED.connection_id, name = EXCLUDED.name, status = EXCLUDED.status,
                objective = EXCLUDED.objective, currency = EXCLUDED.currency, daily_budget_minor = EXCLUDED.daily_budget_minor,
                lifetime_budget_minor = EXCLUDED.lifetime_budget_minor, synced_at = now()
            RETURNING 1)
          SELECT count(*)::int AS n FROM upserted`)
      }

      const upsertAdSets = (scope: StructureScope, page: ReadonlyArray<AdSet>) => {
        const rows = lastPerId(page)
        return rows.length === 0 ? Effect.succeed(0) : count(sql`
          WITH upserted AS (
            INSERT INTO ad_sets (id, profile_id, connection_id, campaign_id, platform_id, name, status, learning_stage_status,
                                 currency, daily_budget_minor, lifetime_budget_minor, synced_at)
            SELECT gen_random_uuid(), ${scope.profileId}, ${scope.connectionId}, c.id, v.platform_id, v.name, v.status, v.learning,
                   ${scope.currency}, v.daily, v.lifetime, now()
            FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.campaign_id)}::text[], ${rows.map((r) => r.name)}::text[],
                        ${rows.map((r) => r.status)}::text[], ${texts(rows.map((r) => r.learning_stage_status))}::text[],
                        ${bigints(rows.map((r) => r.daily_budget_minor))}::bigint[],
                        ${bigints(rows.map((r) => r.lifetime_budget_minor))}::bigint[])
                 AS v(platform_id, campaign_platform_id, name, status, learning, daily, lifetime)
            JOIN ad_campaigns c ON c.profile_id = ${scope.profileId} AND c.platform_id = v.campaign_platform_id
            ON CONFLICT (profile_id, platform_id) DO UPDATE
            SET connection_id = EXCLUDED.connection_id, campaign_id = EXCLUDED.campaign_id, name = EXCLUDED.name,
                status = EXCLUDED.status, learning_stage_status = EXCLUDED.learning_stage_status, currency = EXCLUDED.currency,
                daily_budget_minor = EXCLUDED.daily_budget_minor, lifetime_budget_minor = EXCLUDED.lifetime_budget_minor,
                synced_at = now()
            RETURNING 1)
          SELECT count(*)::int AS n FROM upserted`)
      }

      const upsertAds = (scope: StructureScope, page: ReadonlyArray<Ad>) => {
        const rows = lastPerId(page)
        return rows.length === 0 ? Effect.succeed(0) : count(sql`
          WITH upserted AS (
            INSERT INTO ads (id, profile_id, connection_id, ad_set_id, platform_id, name, status, creative_thumbnail_url,
                             destination_type, destination_phone_number, destination_page_id, call_to_action_type,
                             greeting, greeting_status, welcome_message, synced_at)
            SELECT gen_random_uuid(), ${scope.profileId}, ${scope.connectionId}, s.id, v.platform_id, v.name, v.status, v.thumbnail,
                   v.destination_type, v.phone, v.page, v.cta, v.greeting, v.greeting_status, v.welcome::jsonb, now()
            FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.ad_set_id)}::text[], ${rows.map((r) => r.name)}::text[],
                        ${rows.map((r) => r.status)}::text[], ${texts(rows.map((r) => r.creative.thumbnail_url))}::text[],
                        ${texts(rows.map((r) => r.creative.destination_type))}::text[],
                        ${texts(rows.map((r) => r.creative.destination_phone_number))}::text[],
                        ${texts(rows.map((r) => r.creative.destination_page_id))}::text[],
                        ${texts(rows.map((r) => r.creative.call_to_action_type))}::text[],
                        ${texts(rows.map((r) => r.creative.greeting))}::text[],
                        ${texts(rows.map((r) => r.creative.greeting_status))}::text[],
                        ${texts(rows.map((r) => welcomeJson(r.creative.welcome_message)))}::text[])
                 AS v(platform_id, ad_set_platform_id, name, status, thumbnail, destination_type, phone, page, cta, greeting,
                      greeting_status, welcome)
            JOIN ad_sets s ON s.profile_id = ${scope.profileId} AND s.platform_id = v.ad_set_platform_id
            ON CONFLICT (profile_id, platform_id) DO UPDATE
            SET connection_id = EXCLUDED.connection_id, ad_set_id = EXCLUDED.ad_set_id, name = EXCLUDED.name,
                status = EXCLUDED.status, creative_thumbnail_url = EXCLUDED.creative_thumbnail_url,
                destination_type = EXCLUDED.destination_type, destination_phone_number = EXCLUDED.destination_phone_number,
                destination_page_id = EXCLUDED.destination_page_id, call_to_action_type = EXCLUDED.call_to_action_type,
                greeting = EXCLUDED.greeting, greeting_status = EXCLUDED.greeting_status,
                welcome_message = EXCLUDED.welcome_message, synced_at = now()
            RETURNING 1)
          SELECT count(*)::int AS n FROM upserted`)
      }

      const deleteForProfile = (profileId: string) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM ads WHERE profile_id = ${profileId}`
          yield* sql`DELETE FROM ad_sets WHERE profile_id = ${profileId}`
          yield* sql`DELETE FROM ad_campaigns WHERE profile_id = ${profileId}`
        })

      return atDatabaseBoundary({ upsertCampaigns, upsertAdSets, upsertAds, deleteForProfile })
    })
  )
}

/** One row per id (the last one seen): an upsert statement may touch a row only once. */
const lastPerId = <A extends { readonly id: string }>(rows: ReadonlyArray<A>): ReadonlyArray<A> => {
  const byId = new Map<string, A>()
  for (const row of rows) byId.set(row.id, row)
  return byId.size === rows.length ? rows : [...byId.values()]
}

/** The welcome message as JSON text, null when none is configured. */
const welcomeJson = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value)
