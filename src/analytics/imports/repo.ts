/**
 * The owner of `ad_spend` and `fx_rates` (decision 0041): the idempotent upserts of the operator's
 * imports. Each import runs in one transaction, in statements of at most CHUNK rows.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeRows, nullableColumn } from "../../platform/database.ts"

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

export interface FxRow {
  readonly day: string
  readonly base: string
  readonly quote: string
  readonly rate: string
}

const CHUNK = 1000

const chunks = <A>(rows: ReadonlyArray<A>) => Array.from({ length: Math.ceil(rows.length / CHUNK) }, (_, i) => rows.slice(i * CHUNK, (i + 1) * CHUNK))

const ProfileIdRow = Schema.Struct({ id: Schema.String })

export class AnalyticsImportsRepo extends Context.Service<AnalyticsImportsRepo, {
  /** The ids among `profileIds` that name a profile. */
  readonly existingProfiles: (profileIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, DatabaseUnavailable>
  /**
   * Upserts spend rows (distinct on profile, platform, day and ad) in one transaction; a row
   * already there takes the new campaign, ad set, currency and amount.
   */
  readonly upsertSpend: (rows: ReadonlyArray<SpendRow>) => Effect.Effect<void, DatabaseUnavailable>
  /** Upserts rates (distinct on base, quote and day) from `source` in one transaction. */
  readonly upsertFxRates: (rows: ReadonlyArray<FxRow>, source: string) => Effect.Effect<void, DatabaseUnavailable>
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

      const upsertFxRates = (rows: ReadonlyArray<FxRow>, source: string) =>
        sql.withTransaction(Effect.forEach(chunks(rows), (chunk) =>
          sql`
            INSERT INTO fx_rates (base, quote, day, rate, source)
            SELECT b, q, d, r, ${source} FROM unnest(${chunk.map((r) => r.base)}::text[], ${chunk.map((r) => r.quote)}::text[],
                                                     ${chunk.map((r) => r.day)}::date[], ${chunk.map((r) => r.rate)}::numeric[])
                                         AS v(b, q, d, r)
            ON CONFLICT (base, quote, day) DO UPDATE SET rate = EXCLUDED.rate, source = EXCLUDED.source, imported_at = now()`,
          { discard: true }))

      return atDatabaseBoundary({ existingProfiles, upsertSpend, upsertFxRates })
    })
  )
}
