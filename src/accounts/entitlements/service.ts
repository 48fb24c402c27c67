/**
 * The attribution entitlement's state machine (the spec's "Attribution entitlement" table),
 * applied inside the Profile entity so that changes of one profile happen one at a time.
 */
import { Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../../schema/common.ts"
import type { DatabaseUnavailable, InvalidState } from "../../../schema/errors.ts"
import { NotFound } from "../../../schema/errors.ts"
import { type ConnectScope, isHealthcareFamily, mintableScopes } from "../../../schema/scopes.ts"
import type { EntitlementResult, SetEntitlement } from "../../../schema/tenancy.ts"
import { AdminRepo } from "../admin/repo.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { ApiKeysRepo } from "../api-keys/repo.ts"
import type { AppPrincipal, PrincipalShape } from "../../kernel/principal.ts"
import { movePrivacyMode } from "../privacy.ts"
import { TenancyRepo } from "../profiles/repo.ts"
import { AttributionBackfills } from "./backfills.ts"
import { EntitlementsRepo } from "./repo.ts"

/** Days of history a backfill asks the ad platform for when the add-on goes on. */
export const STANDARD_BACKFILL_DAYS = 90

const ON_SCOPES: ReadonlyArray<ConnectScope> = ["connections", "attribution"]
const OFF_SCOPES: ReadonlyArray<ConnectScope> = ["connections"]

export class Entitlements extends Context.Service<Entitlements, {
  /**
   * `serviceCredentialId`: an internal service changed it over RPC within the app's grant
   * (decision 0096); the audit names that credential instead of the app.
   */
  readonly setAttribution: (
    app: AppPrincipal,
    profileId: string,
    request: SetEntitlement,
    serviceCredentialId?: string
  ) => Effect.Effect<EntitlementResult, NotFound | InvalidState | DatabaseUnavailable>
}>()("svc/Entitlements") {
  static readonly layer = Layer.effect(Entitlements)(
    Effect.gen(function*() {
      const repo = yield* TenancyRepo
      const entitlements = yield* EntitlementsRepo
      const admin = yield* AdminRepo
      const backfills = yield* AttributionBackfills
      const keys = yield* ApiKeysRepo
      const audit = yield* AuditLog
      const noSuchProfile = () => new NotFound({ message: "No such profile." })
      const movePrivacy = movePrivacyMode(repo, keys, audit)

      const setAttribution = Effect.fn("Entitlements.setAttribution")(function*(
        app: AppPrincipal,
        profileId: string,
        request: SetEntitlement,
        serviceCredentialId?: string
      ) {
        if (!isUuid(profileId)) return yield* noSuchProfile()
        return yield* Effect.gen(function*() {
          const found = yield* repo.findOwnedForUpdate(app.appId, profileId.toLowerCase())
          if (Option.isNone(found) || found.value.archived) return yield* noSuchProfile()
          const row = found.value
          const actor: PrincipalShape = serviceCredentialId === undefined ? app : {
            kind: "service",
            credentialId: serviceCredentialId,
            scopes: [],
            rateLimitPerMinute: 0,
            profile: { profileId: row.profile_id, workspaceId: row.workspace_id, attributionEnabled: row.attribution_enabled }
          }
          if (request.as_of !== undefined && (yield* entitlements.isStale(row.profile_id, request.as_of))) {
            // An older delivery than one already applied: discarded, nothing written (no mode, no audit).
            return {
              profile_id: row.profile_id,
              feature: "svc_attribution" as const,
              enabled: row.attribution_enabled,
              changed: false,
              ignored_stale: true as const
            }
          }
          if (request.as_of !== undefined) yield* entitlements.recordDelivery(row.profile_id, request.as_of)
          const moved = yield* movePrivacy(actor, row, request.privacy_mode)
          const privacyMode = moved.privacyMode
          const privacy = moved.revokedKeys === undefined ? {} : { revoked_keys: moved.revokedKeys, privacy_mode: privacyMode }
          if (request.enabled === row.attribution_enabled) {
            return { profile_id: row.profile_id, feature: "svc_attribution" as const, enabled: row.attribution_enabled, changed: false, ...privacy }
          }
          yield* entitlements.setAttribution(row.profile_id, request.enabled)
          const healthcare = isHealthcareFamily({ privacy_mode: privacyMode, is_healthcare_agency: row.is_healthcare_agency })
          let details: Record<string, unknown>
          if (request.enabled) {
            yield* admin.upsertGrant(app.appId, row.profile_id, ON_SCOPES)
            details = { backfills: yield* backfills.enqueue(row.profile_id, STANDARD_BACKFILL_DAYS, "attribution_enabled") }
          } else {
            // Narrowed, not revoked: the connect rail keeps working; keys of the wider grant stop.
            const grantId = yield* admin.upsertGrant(app.appId, row.profile_id, OFF_SCOPES)
            const revoked = yield* keys.revokeKeys({ kind: "grant", grantId, keepingScopes: mintableScopes(OFF_SCOPES, healthcare) })
            details = { revoked_keys: revoked.length }
          }
          yield* audit.record({
            actor,
            action: request.enabled ? "entitlement.enabled" : "entitlement.disabled",
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { feature: "svc_attribution", ...details }
          })
          return { profile_id: row.profile_id, feature: "svc_attribution" as const, enabled: request.enabled, changed: true, ...privacy }
        }).pipe(repo.transaction)
      })

      return { setAttribution }
    })
  ).pipe(Layer.provide([TenancyRepo.layer, EntitlementsRepo.layer, AdminRepo.layer, ApiKeysRepo.layer, AuditLog.layer]))
}

