/**
 * The owner of `ad_spend` and `fx_rates` (decision 0041): the idempotent upserts of the operator's
 * imports (each in one transaction, in statements of at most CHUNK rows) and the ad-platform
 * sync's days (decision 0058).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { minorExponent } from "../../kernel/money.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, nullableColumn } from "../../platform/database.ts"

export interface SpendRow {
  readonly profileId: string
  readonly platform: string
  readonly day: string
  readonly campaignId: string | null
  readonly adSetId: string | null
  readonly adId: string
  readonly currency: string
  readonly amount: string
}

/** One ad's day as the ad-platform sync brings it (source `sync`): spend in minor units of `currency`. */
export interface SyncedSpendRow {
  readonly profileId: string
  readonly platform: string
  readonly day: string
  readonly campaignId: string
  readonly adSetId: string
  readonly adId: string
  readonly currency: string
  readonly spendMinor: number
  readonly impressions: number
  readonly clicks: number
  readonly reportedConversions: number
  readonly reportedChats: number
}

// Re-exported for the importers that still take it from here.
export { minorExponent }

export interface FxRow {
  readonly day: string
  readonly base: string
  readonly quote: string
  readonly rate: string
}

const CHUNK = 1000

const chunks = <A>(rows: ReadonlyArray<A>) => Array.from({ length: Math.ceil(rows.length / CHUNK) }, (_, i) => rows.slice(i * CHUNK, (i + 1) * CHUNK))

/** The last row per (profile, platform, day, ad): an upsert statement may touch a row only once. */
const lastPerAdDay = (rows: ReadonlyArray<SyncedSpendRow>): ReadonlyArray<SyncedSpendRow> => {
  const byKey = new Map<string, SyncedSpendRow>()
  for (const row of rows) byKey.set(`${row.profileId}|${row.platform}|${row.day}|${row.adId}`, row)
  return byKey.size === rows.length ? rows : [...byKey.values()]
}

const ProfileIdRow = Schema.Struct({ id: Schema.String })

export const TargetSpendDay = Schema.Struct({ day: Schema.String, amount: Schema.NullOr(Schema.Finite) })
export interface TargetSpend {
  readonly known: boolean
  readonly currency: string | null
  readonly days: ReadonlyArray<typeof TargetSpendDay.Type>
}
const SpendProbe = Schema.Struct({ known: Schema.Boolean, currency: Schema.NullOr(Schema.String) })

export class AnalyticsImportsRepo extends Context.Service<AnalyticsImportsRepo, {
  /** The ids among `profileIds` that name a profile. */
  readonly existingProfiles: (profileIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, DatabaseUnavailable>
  /**
   * Upserts spend rows (distinct on profile, platform, day and ad) in one transaction; a row
   * already there takes the new campaign, ad set, currency and amount.
   */
  readonly upsertSpend: (rows: ReadonlyArray<SpendRow>) => Effect.Effect<void, DatabaseUnavailable>
  /**
   * Upserts the ad platform's synced days (distinct on profile, platform, day and ad) with source
   * `sync`: the amount in major units, impressions, clicks and the platform's reported
   * conversions and chats. One statement per CHUNK rows, each its own transaction (a sync
   * resumes by writing the same days again).
   */
  readonly upsertSyncedSpend: (rows: ReadonlyArray<SyncedSpendRow>) => Effect.Effect<void, DatabaseUnavailable>
  /** Upserts rates (distinct on base, quote and day) from `source` in one transaction. */
  readonly upsertFxRates: (rows: ReadonlyArray<FxRow>, source: string) => Effect.Effect<void, DatabaseUnavailable>
  /**
   * A campaign's or ad set's spend on each of `days` (days with spend only) in the profile's
   * currency, `amount` null on a day an amount could not be converted; `known` whether the target
   * has any spend row at all; `currency` the profile's.
   */
  readonly targetSpend: (
    profileId: string,
    level: "campaign" | "ad_set",
    id: string,
    days: ReadonlyArray<string>
  ) => Effect.Effect<TargetSpend, DatabaseUnavailable>
}>()("svc/AnalyticsImportsRepo") {
  static readonly layer = Layer.effect(AnalyticsImportsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const profileIdRows = decodeRows(ProfileIdRow)

      const existingProfiles = (profileIds: ReadonlyArray<string>) =>
        Effect.map(
          profileIdRows(sql`SELECT id::text AS id FROM profiles WHERE id = ANY(${profileIds}::uuid[])`),
          (rows) => rows.map((row) => row.id)
        )

      const upsertSpend = (rows: ReadonlyArray<SpendRow>) =>
        sql.withTransaction(Effect.forEach(chunks(rows), (chunk) =>
          sql`
            INSERT INTO ad_spend (profile_id, platform, day, campaign_external_id, ad_set_external_id, ad_external_id, currency, amount)
            SELECT * FROM unnest(${chunk.map((r) => r.profileId)}::uuid[], ${chunk.map((r) => r.platform)}::text[],
                                 ${chunk.map((r) => r.day)}::date[], ${nullableColumn(chunk.map((r) => r.campaignId))}::text[],
                                 ${nullableColumn(chunk.map((r) => r.adSetId))}::text[], ${chunk.map((r) => r.adId)}::text[],
                                 ${chunk.map((r) => r.currency)}::text[], ${chunk.map((r) => r.amount)}::numeric(20, 6)[])
            ON CONFLICT (profile_id, platform, day, ad_external_id) DO UPDATE
            SET campaign_external_id = EXCLUDED.campaign_external_id, ad_set_external_id = EXCLUDED.ad_set_external_id,
                currency = EXCLUDED.currency, amount = EXCLUDED.amount, imported_at = now()`,
          { discard: true }))

      const upsertSyncedSpend = (rows: ReadonlyArray<SyncedSpendRow>) =>
        Effect.forEach(chunks(lastPerAdDay(rows)), (chunk) =>
          sql`
            INSERT INTO ad_spend (profile_id, platform, day, campaign_external_id, ad_set_external_id, ad_external_id, currency,
                                  amount, source, impressions, clicks, reported_conversions, reported_chats)
            SELECT p, pl, d, c, s, a, cur, m / power(10::numeric, e), 'sync', i, k, rc, rh
            FROM unnest(${chunk.map((r) => r.profileId)}::uuid[], ${chunk.map((r) => r.platform)}::text[],
                        ${chunk.map((r) => r.day)}::date[], ${chunk.map((r) => r.campaignId)}::text[],
                        ${chunk.map((r) => r.adSetId)}::text[], ${chunk.map((r) => r.adId)}::text[],
                        ${chunk.map((r) => r.currency)}::text[], ${chunk.map((r) => String(r.spendMinor))}::numeric[],
                        ${chunk.map((r) => minorExponent(r.currency))}::int[], ${chunk.map((r) => String(r.impressions))}::bigint[],
                        ${chunk.map((r) => String(r.clicks))}::bigint[], ${chunk.map((r) => r.reportedConversions)}::int[],
                        ${chunk.map((r) => r.reportedChats)}::int[])
                 AS v(p, pl, d, c, s, a, cur, m, e, i, k, rc, rh)
            ON CONFLICT (profile_id, platform, day, ad_external_id) DO UPDATE
            SET campaign_external_id = EXCLUDED.campaign_external_id, ad_set_external_id = EXCLUDED.ad_set_external_id,
                currency = EXCLUDED.currency, amount = EXCLUDED.amount, source = 'sync', impressions = EXCLUDED.impressions,
                clicks = EXCLUDED.clicks, reported_conversions = EXCLUDED.reported_conversions,
                reported_chats = EXCLUDED.reported_chats, imported_at = now()`,
          { discard: true })

      const upsertFxRates = (rows: ReadonlyArray<FxRow>, source: string) =>
        sql.withTransaction(Effect.forEach(chunks(rows), (chunk) =>
          sql`
            INSERT INTO fx_rates (base, quote, day, rate, source)
            SELECT b, q, d, r, ${source} FROM unnest(${chunk.map((r) => r.base)}::text[], ${chunk.map((r) => r.quote)}::text[],
                                                     ${chunk.map((r) => r.day)}::date[], ${chunk.map((r) => r.rate)}::numeric[])
                                         AS v(b, q, d, r)
            ON CONFLICT (base, quote, day) DO UPDATE SET rate = EXCLUDED.rate, source = EXCLUDED.source, imported_at = now()`,
          { discard: true }))

      const spendDays = decodeRows(TargetSpendDay)
      const spendProbe = decodeFirstRow(SpendProbe)
      const targetSpend = (profileId: string, level: "campaign" | "ad_set", id: string, days: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const column = sql.literal(level === "campaign" ? "campaign_external_id" : "ad_set_external_id")
          const probe = yield* spendProbe(sql`
            SELECT EXISTS (SELECT 1 FROM ad_spend WHERE profile_id = ${profileId} AND ${column} = ${id}) AS known,
                   (SELECT currency FROM profiles WHERE id = ${profileId}) AS currency`)
          const known = Option.exists(probe, (row) => row.known)
          const currency = Option.match(probe, { onNone: () => null, onSome: (row) => row.currency })
          if (!known || days.length === 0) return { known, currency, days: [] }
          // Converted per (day, currency) as the analytics reads do; an unset profile currency takes amounts as they are.
          const rows = yield* spendDays(sql`
            WITH base AS (
              SELECT day, currency, sum(amount) AS money FROM ad_spend
              WHERE profile_id = ${profileId} AND ${column} = ${id} AND day = ANY(${days}::date[])
              GROUP BY day, currency)
            SELECT to_char(day, 'YYYY-MM-DD') AS day,
                   CASE WHEN bool_or(converted IS NULL) THEN NULL ELSE sum(converted)::float8 END AS amount
            FROM (SELECT day, CASE WHEN money = 0 OR ${currency}::text IS NULL OR currency = ${currency}::text THEN money
                                   ELSE money * analytics_fx_rate(currency, ${currency}::text, day) END AS converted
                  FROM base) x
            GROUP BY day ORDER BY day`)
          return { known, currency, days: rows }
        })

      return atDatabaseBoundary({ existingProfiles, upsertSpend, upsertSyncedSpend, upsertFxRates, targetSpend })
    })
  )
}
