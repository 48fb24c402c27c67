/**
 * The conversion-sync catalog (issue 20 part 1, decision 0073): the profile's privacy mode, its
 * `privacy_config` (replaced whole by every PUT) and its Platform-Safe target. Moving to a
 * healthcare-family mode revokes the live delegated keys that carry a person scope (S5.3).
 */
import { Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, InvalidState, NotFound, ValidationError } from "../../../schema/errors.ts"
import type { PutCatalog } from "../../../schema/exports.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { PrivacySettings } from "../../accounts/privacy.ts"
import { type CatalogRow, CatalogRepo } from "./repo.ts"

export interface CatalogView {
  readonly profile_id: string
  readonly settings: {
    readonly privacy_mode: CatalogRow["privacy_mode"]
    readonly privacy_config: CatalogRow["privacy_config"]
    readonly platform_safe_target: CatalogRow["platform_safe_target"]
    readonly platform_safe_audiences: CatalogRow["platform_safe_audiences"]
  }
  readonly revoked_keys: number
}

const HEALTHCARE_MODES: ReadonlyArray<string> = ["platform_safe", "hipaa"]

const viewOf = (row: CatalogRow, revoked: number): CatalogView => ({
  profile_id: row.profile_id,
  settings: {
    privacy_mode: row.privacy_mode,
    privacy_config: row.privacy_config,
    platform_safe_target: row.platform_safe_target,
    platform_safe_audiences: row.platform_safe_audiences
  },
  revoked_keys: revoked
})

const noSuchProfile = () => new NotFound({ message: "No such profile." })

export class ConversionSyncCatalog extends Context.Service<ConversionSyncCatalog, {
  readonly get: (profile: ProfileContext) => Effect.Effect<CatalogView, NotFound | DatabaseUnavailable>
  readonly put: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: PutCatalog
  ) => Effect.Effect<CatalogView, NotFound | ValidationError | InvalidState | DatabaseUnavailable>
}>()("svc/ConversionSyncCatalog") {
  static readonly layer = Layer.effect(ConversionSyncCatalog)(
    Effect.gen(function*() {
      const repo = yield* CatalogRepo
      const privacy = yield* PrivacySettings
      const audit = yield* AuditLog

      const get = Effect.fn("ConversionSyncCatalog.get")(function*(profile: ProfileContext) {
        const row = yield* repo.find(profile.profileId, false)
        if (Option.isNone(row)) return yield* noSuchProfile()
        return viewOf(row.value, 0)
      })

      const put = Effect.fn("ConversionSyncCatalog.put")(function*(actor: PrincipalShape, profile: ProfileContext, body: PutCatalog) {
        const config = body.privacy_config ?? null
        if (body.privacy_mode === "custom" && config === null) {
          return yield* new ValidationError({ message: "body.privacy_config: the custom mode needs a privacy_config composed here" })
        }
        return yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.find(profile.profileId, true)
          if (Option.isNone(found)) return yield* noSuchProfile()
          const before = found.value
          // As on the partner rows of the lifecycle table: an app's delegated key never moves a mode other than standard.
          if (actor.kind === "api_key" && actor.oauthAppId !== null && before.privacy_mode !== "standard" && body.privacy_mode !== before.privacy_mode) {
            return yield* new InvalidState({
              message: `The privacy mode is ${before.privacy_mode}; only the merchant changes it, not a partner app's key.`,
              reason: "privacy_mode_locked"
            })
          }
          const target = body.platform_safe_target ?? before.platform_safe_target
          yield* privacy.set(before.profile_id, body.privacy_mode, target)
          yield* repo.putConfig(before.profile_id, config)
          // Absent keeps the stored switch (decision 0100).
          const audiences = body.platform_safe_audiences ?? before.platform_safe_audiences
          if (audiences !== before.platform_safe_audiences) yield* repo.setAudiences(before.profile_id, audiences)
          // Entering the healthcare family: delegated keys lose their person reads (S5.3); a person's own keys stay.
          const entering = HEALTHCARE_MODES.includes(body.privacy_mode) && !HEALTHCARE_MODES.includes(before.privacy_mode)
          const revoked = entering ? yield* privacy.revokePersonKeys(before.profile_id) : 0
          yield* audit.record({
            actor,
            action: "conversion_sync.catalog_updated",
            targetKind: "profile",
            targetId: before.profile_id,
            profileId: before.profile_id,
            workspaceId: before.workspace_id,
            details: {
              from: before.privacy_mode,
              to: body.privacy_mode,
              platform_safe_target: target,
              platform_safe_audiences: audiences,
              revoked_keys: revoked
            }
          })
          return viewOf({
            ...before,
            privacy_mode: body.privacy_mode,
            platform_safe_target: target,
            privacy_config: config,
            platform_safe_audiences: audiences
          }, revoked)
        }))
      })

      return { get, put }
    })
  ).pipe(Layer.provide([CatalogRepo.layer, PrivacySettings.layer, AuditLog.layer]))
}
