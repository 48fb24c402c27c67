/**
 * SQL of partner data (decision 0033): the synced ads and existing touch keys. Touches, re-credit
 * marks, the touches crediting reads and declared sources go through their owners (attribution's
 * src/attribution/intake.ts, identity's declared sources).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"

/** A synced ad with its ad set and campaign. */
export const AdRow = Schema.Struct({
  platform_id: Schema.String,
  name: Schema.String,
  ad_set_platform_id: Schema.String,
  ad_set_name: Schema.String,
  campaign_platform_id: Schema.String,
  campaign_name: Schema.String
})
export type AdRow = typeof AdRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class PartnerRepo extends Context.Service<PartnerRepo, {
  /** The profile's synced ads among `platformIds`, with their ad set and campaign. */
  readonly adsByPlatformIds: (profileId: string, platformIds: ReadonlyArray<string>) => Repo<ReadonlyArray<AdRow>>
  /** Which of `keys` already name a touch of `sourceSystem`. */
  readonly existingTouchKeys: (
    profileId: string,
    sourceSystem: string,
    keys: ReadonlyArray<string>
  ) => Repo<ReadonlyArray<string>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/PartnerRepo") {
  static readonly layer = Layer.effect(PartnerRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const adRows = decodeRows(AdRow)
      const keyRows = decodeRows(Schema.Struct({ key: Schema.String }))

      const adsByPlatformIds = (profileId: string, platformIds: ReadonlyArray<string>) =>
        adRows(sql`
          SELECT a.platform_id, a.name, s.platform_id AS ad_set_platform_id, s.name AS ad_set_name,
                 c.platform_id AS campaign_platform_id, c.name AS campaign_name
          FROM ads a
          JOIN ad_sets s ON s.id = a.ad_set_id
          JOIN ad_campaigns c ON c.id = s.campaign_id
          WHERE a.profile_id = ${profileId} AND a.platform_id = ANY(${[...platformIds]}::text[])`)

      const existingTouchKeys = (profileId: string, sourceSystem: string, keys: ReadonlyArray<string>) =>
        Effect.map(
          keyRows(sql`
            SELECT idempotency_key AS key FROM touch_keys
            WHERE profile_id = ${profileId} AND source_system = ${sourceSystem}
              AND idempotency_key = ANY(${[...keys]}::text[])`),
          (rows) => rows.map((row) => row.key)
        )

      return {
        ...atDatabaseBoundary({
          adsByPlatformIds,
          existingTouchKeys
        }),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
