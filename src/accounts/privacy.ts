/**
 * The privacy-mode rows of the profile lifecycle table, shared by provisioning and the
 * entitlement call: only `standard` moves (to `platform_safe` or `hipaa`); it is stored before
 * the grant is written, and live delegated keys carrying person scopes are revoked.
 */
import { Context, Effect, Layer } from "effect"
import { type DatabaseUnavailable, InvalidState } from "../../schema/errors.ts"
import { PERSON_SCOPES } from "../../schema/scopes.ts"
import type { PrivacyMode } from "../../schema/tenancy.ts"
import type { AuditLog } from "../kernel/audit/repo.ts"
import { ApiKeysRepo } from "./api-keys/repo.ts"
import type { PrincipalShape } from "../kernel/principal.ts"
import { TenancyRepo } from "./profiles/repo.ts"

export interface PrivacyMove {
  readonly privacyMode: PrivacyMode
  /** Keys revoked by the move; undefined when the mode did not move. */
  readonly revokedKeys: number | undefined
}

export const movePrivacyMode = (repo: TenancyRepo["Service"], keys: ApiKeysRepo["Service"], audit: AuditLog["Service"]) =>
  Effect.fn("Tenancy.movePrivacyMode")(function*(
    actor: PrincipalShape,
    profile: { readonly profile_id: string; readonly workspace_id: string; readonly privacy_mode: PrivacyMode },
    requested: "standard" | "platform_safe" | "hipaa" | undefined
  ) {
    if (requested === undefined || requested === profile.privacy_mode) {
      return { privacyMode: profile.privacy_mode, revokedKeys: undefined } satisfies PrivacyMove
    }
    if (profile.privacy_mode !== "standard" || requested === "standard") {
      return yield* new InvalidState({
        message: `The privacy mode is ${profile.privacy_mode}; only the merchant owner changes it, in the conversion-sync catalog.`,
        reason: "privacy_mode_locked"
      })
    }
    yield* repo.setPrivacyMode(profile.profile_id, requested)
    const revokedKeys = (yield* keys.revokeKeys({ kind: "delegated_on_profile", profileId: profile.profile_id, scopes: PERSON_SCOPES }))
      .length
    yield* audit.record({
      actor,
      action: "profile.privacy_mode_changed",
      targetKind: "profile",
      targetId: profile.profile_id,
      profileId: profile.profile_id,
      workspaceId: profile.workspace_id,
      details: { from: profile.privacy_mode, to: requested, revoked_keys: revokedKeys }
    })
    return { privacyMode: requested, revokedKeys } satisfies PrivacyMove
  })

/**
 * The privacy settings as another context moves them (the conversion-sync catalog and
 * Platform-Safe, src/exports/): each write runs in the caller's transaction.
 */
export class PrivacySettings extends Context.Service<PrivacySettings, {
  /** Any mode, and the Platform-Safe target. */
  readonly set: (profileId: string, mode: PrivacyMode, target: "existing" | "clean") => Effect.Effect<void, DatabaseUnavailable>
  /** Revokes the profile's live delegated keys that carry a person scope (S5.3); answers how many. */
  readonly revokePersonKeys: (profileId: string) => Effect.Effect<number, DatabaseUnavailable>
}>()("svc/PrivacySettings") {
  static readonly layer = Layer.effect(PrivacySettings)(
    Effect.gen(function*() {
      const repo = yield* TenancyRepo
      const keys = yield* ApiKeysRepo
      const set = Effect.fn("PrivacySettings.set")(function*(profileId: string, mode: PrivacyMode, target: "existing" | "clean") {
        yield* repo.setPrivacySettings(profileId, mode, target)
      })
      const revokePersonKeys = Effect.fn("PrivacySettings.revokePersonKeys")(function*(profileId: string) {
        return (yield* keys.revokeKeys({ kind: "delegated_on_profile", profileId, scopes: PERSON_SCOPES })).length
      })
      return { set, revokePersonKeys }
    })
  ).pipe(Layer.provide([TenancyRepo.layer, ApiKeysRepo.layer]))
}
