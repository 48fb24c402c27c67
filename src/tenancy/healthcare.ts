/**
 * S5.5: on a healthcare-family profile (its privacy mode, or its workspace is a healthcare
 * agency) person reads are never answered, whatever the principal's scopes: keys never carry
 * the person scopes there, but a console session's membership may.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type DatabaseUnavailable, InsufficientScope } from "../../schema/errors.ts"
import { isHealthcareFamily } from "../../schema/scopes.ts"
import type { ProfileContext } from "../auth/principal.ts"
import { orDatabaseUnavailable } from "../platform/database.ts"

export class HealthcareCheck extends Context.Service<HealthcareCheck, {
  readonly isHealthcareFamily: (profileId: string) => Effect.Effect<boolean, DatabaseUnavailable>
  /** 403 `insufficient_scope` on a healthcare-family profile. */
  readonly refuse: (profile: ProfileContext) => Effect.Effect<void, DatabaseUnavailable | InsufficientScope>
}>()("svc/HealthcareCheck") {
  static readonly layer = Layer.effect(HealthcareCheck)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const healthcare = (profileId: string) =>
        orDatabaseUnavailable(Effect.map(
          sql<{ privacy_mode: string; is_healthcare_agency: boolean }>`
            SELECT p.privacy_mode, w.is_healthcare_agency FROM profiles p JOIN workspaces w ON w.id = p.workspace_id
            WHERE p.id = ${profileId}`,
          (rows) => rows[0] !== undefined && isHealthcareFamily(rows[0])
        ))
      return {
        isHealthcareFamily: healthcare,
        refuse: (profile) =>
          Effect.flatMap(healthcare(profile.profileId), (family) =>
            family
              ? Effect.fail(
                new InsufficientScope({
                  message: "Person reads are not answered on a healthcare-family profile; read projected journeys under conversions:read.",
                  reason: "healthcare_family_profile"
                })
              )
              : Effect.void)
      }
    })
  )
}
