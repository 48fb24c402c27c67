/**
 * S5.5: on a healthcare-family profile (its privacy mode, or its workspace is a healthcare
 * agency) person reads are never answered, whatever the principal's scopes: keys never carry
 * the person scopes there, but a console session's membership may.
 */
import { Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, InsufficientScope } from "../../schema/errors.ts"
import { isHealthcareFamily } from "../../schema/scopes.ts"
import type { ProfileContext } from "../kernel/principal.ts"
import { TenancyRepo } from "./profiles/repo.ts"

export class HealthcareCheck extends Context.Service<HealthcareCheck, {
  readonly isHealthcareFamily: (profileId: string) => Effect.Effect<boolean, DatabaseUnavailable>
  /** 403 `insufficient_scope` on a healthcare-family profile. */
  readonly refuse: (profile: ProfileContext) => Effect.Effect<void, DatabaseUnavailable | InsufficientScope>
}>()("svc/HealthcareCheck") {
  static readonly layer = Layer.effect(HealthcareCheck)(
    Effect.gen(function*() {
      const profiles = yield* TenancyRepo
      const healthcare = (profileId: string) =>
        Effect.map(profiles.healthcareSettings(profileId), (settings) => Option.isSome(settings) && isHealthcareFamily(settings.value))
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
  ).pipe(Layer.provide(TenancyRepo.layer))
}
