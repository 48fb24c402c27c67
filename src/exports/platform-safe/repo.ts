/**
 * The owner of `platform_safe_datasets` (a profile's Clean Dataset and its custom conversions)
 * and `platform_safe_rebuilds` (one row per ad-set rebuild, each platform id recorded as soon as
 * it exists, so a retry resumes the same rebuild). Also reads the outcome types a profile tracks
 * and maps (conversion definitions and export rules, owned elsewhere; read only).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export const StoredConversion = Schema.Struct({ outcome_type: Schema.String, id: Schema.String, custom_event_type: Schema.String })
export type StoredConversion = typeof StoredConversion.Type

export const CleanDatasetRow = Schema.Struct({
  profile_id: Schema.String,
  connection_id: Schema.String,
  dataset_id: Schema.String,
  destination_id: Schema.NullOr(Schema.String),
  custom_conversions: Schema.Array(StoredConversion)
})
export type CleanDatasetRow = typeof CleanDatasetRow.Type

export const RebuildStep = Schema.Literals(["create", "copy_ads", "activate", "pause_original", "done"])
export type RebuildStep = typeof RebuildStep.Type

export const RebuildRow = Schema.Struct({
  original_ad_set_id: Schema.String,
  mode: Schema.Literals(["switch", "run_both"]),
  copy_ad_set_id: Schema.NullOr(Schema.String),
  copied_ad_ids: Schema.Array(Schema.String),
  step: RebuildStep,
  pause_refused: Schema.Boolean
})
export type RebuildRow = typeof RebuildRow.Type

export interface RebuildProgress {
  readonly copy_ad_set_id?: string
  readonly copied_ad_ids?: ReadonlyArray<string>
  readonly step: RebuildStep
  readonly pause_refused?: boolean
}

export class PlatformSafeRepo extends Context.Service<PlatformSafeRepo, {
  readonly cleanDataset: (profileId: string) => Repo<Option.Option<CleanDatasetRow>>
  /** Records the dataset the platform just created (first writer wins; answers the stored row). */
  readonly saveDataset: (profileId: string, connectionId: string, datasetId: string) => Repo<Option.Option<CleanDatasetRow>>
  readonly saveConversions: (profileId: string, conversions: ReadonlyArray<StoredConversion>) => Repo<void>
  readonly saveDestination: (profileId: string, destinationId: string) => Repo<void>
  /** Outcome types the profile tracks: its attribution-eligible conversion definitions. */
  readonly trackedTypes: (profileId: string) => Repo<ReadonlyArray<string>>
  /** Outcome types an enabled export rule maps to the ad platform. */
  readonly mappedTypes: (profileId: string) => Repo<ReadonlyArray<string>>
  /** The rebuild of this ad set, started now in `mode` unless one exists (then that one). */
  readonly startRebuild: (profileId: string, originalAdSetId: string, mode: "switch" | "run_both") => Repo<RebuildRow>
  readonly advanceRebuild: (profileId: string, originalAdSetId: string, progress: RebuildProgress) => Repo<void>
}>()("svc/PlatformSafeRepo") {
  static readonly layer = Layer.effect(PlatformSafeRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstDataset = decodeFirstRow(CleanDatasetRow)
      const firstRebuild = decodeFirstRow(RebuildRow)
      const keys = decodeRows(Schema.Struct({ key: Schema.String }))

      const cleanDataset = (profileId: string) =>
        firstDataset(sql`
          SELECT profile_id, connection_id, dataset_id, destination_id, custom_conversions
          FROM platform_safe_datasets WHERE profile_id = ${profileId}`)

      const saveDataset = (profileId: string, connectionId: string, datasetId: string) =>
        Effect.andThen(
          sql`
            INSERT INTO platform_safe_datasets (profile_id, connection_id, dataset_id)
            VALUES (${profileId}, ${connectionId}, ${datasetId})
            ON CONFLICT (profile_id) DO NOTHING`,
          cleanDataset(profileId)
        )

      const saveConversions = (profileId: string, conversions: ReadonlyArray<StoredConversion>) =>
        Effect.asVoid(sql`
          UPDATE platform_safe_datasets SET custom_conversions = ${JSON.stringify(conversions)}::jsonb, updated_at = now()
          WHERE profile_id = ${profileId}`)

      const saveDestination = (profileId: string, destinationId: string) =>
        Effect.asVoid(sql`
          UPDATE platform_safe_datasets SET destination_id = ${destinationId}, updated_at = now() WHERE profile_id = ${profileId}`)

      const trackedTypes = (profileId: string) =>
        Effect.map(
          keys(sql`
            SELECT conversion_key AS key FROM conversion_definitions
            WHERE profile_id = ${profileId} AND attribution_eligible ORDER BY conversion_key`),
          (rows) => rows.map((r) => r.key)
        )

      const mappedTypes = (profileId: string) =>
        Effect.map(
          keys(sql`SELECT conversion_key AS key FROM export_rules WHERE profile_id = ${profileId} AND enabled ORDER BY conversion_key`),
          (rows) => rows.map((r) => r.key)
        )

      const rebuildColumns = sql`original_ad_set_id, mode, copy_ad_set_id, copied_ad_ids, step, pause_refused`

      const startRebuild = (profileId: string, originalAdSetId: string, mode: "switch" | "run_both") =>
        Effect.flatMap(
          firstRebuild(sql`
            INSERT INTO platform_safe_rebuilds (profile_id, original_ad_set_id, mode)
            VALUES (${profileId}, ${originalAdSetId}, ${mode})
            ON CONFLICT (profile_id, original_ad_set_id) DO UPDATE SET updated_at = platform_safe_rebuilds.updated_at
            RETURNING ${rebuildColumns}`),
          (row) => Option.match(row, { onNone: () => Effect.die("upsert returned no row"), onSome: Effect.succeed })
        )

      const advanceRebuild = (profileId: string, originalAdSetId: string, progress: RebuildProgress) =>
        Effect.asVoid(sql`
          UPDATE platform_safe_rebuilds SET
            copy_ad_set_id = COALESCE(${progress.copy_ad_set_id ?? null}, copy_ad_set_id),
            copied_ad_ids = COALESCE(${progress.copied_ad_ids === undefined ? null : JSON.stringify(progress.copied_ad_ids)}::jsonb, copied_ad_ids),
            step = ${progress.step},
            pause_refused = COALESCE(${progress.pause_refused ?? null}::boolean, pause_refused),
            updated_at = now()
          WHERE profile_id = ${profileId} AND original_ad_set_id = ${originalAdSetId}`)

      return atDatabaseBoundary({
        cleanDataset,
        saveDataset,
        saveConversions,
        saveDestination,
        trackedTypes,
        mappedTypes,
        startRebuild,
        advanceRebuild
      })
    })
  )
}
