/**
 * Turning the attribution add-on on or off for the provisioning app, as the HTTP route
 * (`PUT /profiles/{profileId}/entitlements/svc_attribution`) and the RPC `EntitlementsSet` both
 * answer it: through the Profile entity (changes of one profile happen one at a time, on its
 * runner), then this runner re-reads the credentials the change revoked or unlocked.
 */
import { Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, type InvalidState, NotFound, type ServiceUnavailable } from "../../../schema/errors.ts"
import type { EntitlementBody, SetEntitlement } from "../../../schema/tenancy.ts"
import { CredentialStore } from "../../kernel/principal.ts"
import { routeProfileCall } from "../../platform/entity-calls.ts"
import { CurrentRequestId } from "../../platform/request-id.ts"
import { Profile } from "./entity.ts"
import { TenancyRepo } from "./repo.ts"

type Failure = NotFound | InvalidState | ServiceUnavailable | DatabaseUnavailable
type Answer = typeof EntitlementBody.Type

export class EntitlementSwitch extends Context.Service<EntitlementSwitch, {
  /** The change as `app` asks it; `serviceCredentialId`: the internal service that sent it over RPC (the audit names it). */
  readonly set: (
    app: { readonly appId: string; readonly clientId: string },
    profileId: string,
    change: SetEntitlement,
    serviceCredentialId?: string
  ) => Effect.Effect<Answer, Failure>
  /** The change on behalf of the app that provisioned the profile; 404 for a profile no app provisioned. */
  readonly setForProvisioningApp: (
    profileId: string,
    change: SetEntitlement,
    serviceCredentialId?: string
  ) => Effect.Effect<Answer, Failure>
}>()("svc/EntitlementSwitch") {
  static readonly layer = Layer.effect(EntitlementSwitch)(
    Effect.gen(function*() {
      const profiles = yield* Profile.client
      const tenancy = yield* TenancyRepo
      // Optional: the cluster-only test server runs the RPC surface without the HTTP credential store.
      const credentials = yield* Effect.serviceOption(CredentialStore)

      const set = Effect.fn("EntitlementSwitch.set")(function*(
        app: { readonly appId: string; readonly clientId: string },
        profileId: string,
        change: SetEntitlement,
        serviceCredentialId?: string
      ) {
        const result = yield* routeProfileCall(
          profiles(profileId).SetEntitlement({
            app_id: app.appId,
            client_id: app.clientId,
            request_id: yield* CurrentRequestId,
            enabled: change.enabled,
            ...(change.privacy_mode === undefined ? {} : { privacy_mode: change.privacy_mode }),
            ...(change.as_of === undefined ? {} : { as_of: change.as_of }),
            ...(serviceCredentialId === undefined ? {} : { service_credential_id: serviceCredentialId })
          }),
          "outcome_unknown"
        )
        // The entity may run on another runner; whatever it revoked or unlocked, this one re-reads at once.
        if (Option.isSome(credentials) && (result.changed || result.revoked_keys !== undefined)) yield* credentials.value.forget
        return {
          data: {
            profile_id: result.profile_id,
            feature: result.feature,
            enabled: result.enabled,
            changed: result.changed,
            ...(result.ignored_stale === true ? { ignored_stale: true as const } : {})
          },
          meta: { profile_id: result.profile_id },
          ...(result.revoked_keys === undefined || result.privacy_mode === undefined
            ? {}
            : { grant: { revoked_keys: result.revoked_keys, privacy_mode: result.privacy_mode } })
        } satisfies Answer
      })

      const setForProvisioningApp = Effect.fn("EntitlementSwitch.setForProvisioningApp")(function*(
        profileId: string,
        change: SetEntitlement,
        serviceCredentialId?: string
      ) {
        const app = yield* tenancy.provisioningAppOf(profileId)
        if (Option.isNone(app)) return yield* new NotFound({ message: "No such profile." })
        return yield* set({ appId: app.value.app_id, clientId: app.value.client_id }, profileId, change, serviceCredentialId)
      })

      return { set, setForProvisioningApp }
    })
  ).pipe(Layer.provide(TenancyRepo.layer))
}
