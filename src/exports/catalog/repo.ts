/**
 * The owner of `conversion_sync_settings` (the catalog's `privacy_config`). `privacy_mode` and
 * `platform_safe_target` are profile fields, read here and written through TenancyRepo.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { PlatformSafeAudiences, PlatformSafeTarget, PrivacyConfig } from "../../../schema/exports.ts"
import { PrivacyMode } from "../../../schema/tenancy.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export const CatalogRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  privacy_mode: PrivacyMode,
  platform_safe_target: PlatformSafeTarget,
  is_healthcare_agency: Schema.Boolean,
  privacy_config: Schema.NullOr(PrivacyConfig),
  platform_safe_audiences: PlatformSafeAudiences
})
export type CatalogRow = typeof CatalogRow.Type

export class CatalogRepo extends Context.Service<CatalogRepo, {
  /** The profile's catalog settings; `lock` holds the profile row until the transaction ends. */
  readonly find: (profileId: string, lock: boolean) => Repo<Option.Option<CatalogRow>>
  /** Replaces `privacy_config` (null clears it). */
  readonly putConfig: (profileId: string, config: PrivacyConfig | null) => Repo<void>
  /** Sets the Platform-Safe audience switch (decision 0100). */
  readonly setAudiences: (profileId: string, value: PlatformSafeAudiences) => Repo<void>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/CatalogRepo") {
  static readonly layer = Layer.effect(CatalogRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const first = decodeFirstRow(CatalogRow)
      const find = (profileId: string, lock: boolean) =>
        first(sql`
          SELECT p.id AS profile_id, p.workspace_id, p.privacy_mode, p.platform_safe_target, w.is_healthcare_agency,
                 s.privacy_config, COALESCE(s.platform_safe_audiences, 'disabled') AS platform_safe_audiences
          FROM profiles p JOIN workspaces w ON w.id = p.workspace_id
          LEFT JOIN conversion_sync_settings s ON s.profile_id = p.id
          WHERE p.id = ${profileId} ${lock ? sql`FOR UPDATE OF p` : sql``}`)
      const putConfig = (profileId: string, config: PrivacyConfig | null) =>
        Effect.asVoid(sql`
          INSERT INTO conversion_sync_settings (profile_id, privacy_config, updated_at)
          VALUES (${profileId}, ${config === null ? null : JSON.stringify(config)}::jsonb, now())
          ON CONFLICT (profile_id) DO UPDATE SET privacy_config = EXCLUDED.privacy_config, updated_at = now()`)
      const setAudiences = (profileId: string, value: PlatformSafeAudiences) =>
        Effect.asVoid(sql`
          INSERT INTO conversion_sync_settings (profile_id, platform_safe_audiences, updated_at)
          VALUES (${profileId}, ${value}, now())
          ON CONFLICT (profile_id) DO UPDATE SET platform_safe_audiences = EXCLUDED.platform_safe_audiences, updated_at = now()`)
      return {
        ...atDatabaseBoundary({ find, putConfig, setAudiences }),
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
