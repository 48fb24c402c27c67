/**
 * Creating the profile an app provisions (the provisioning API and OAuth consent alike): the
 * workspace, the profile, the app's grant, the entitlement row and, with an email, the owner,
 * each written by its owner in the caller's transaction.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { AdminRepo } from "../admin/repo.ts"
import { EntitlementsRepo } from "../entitlements/repo.ts"
import { PeopleRepo } from "../people/repo.ts"
import { WorkspacesRepo } from "../workspaces/repo.ts"
import { type NewProvisionedProfile, TenancyRepo } from "./repo.ts"

export class ProvisionedProfiles extends Context.Service<ProvisionedProfiles, {
  /** Answers the new profile's id, or None when the ref was taken concurrently (nothing is left behind). */
  readonly insert: (profile: NewProvisionedProfile) => Effect.Effect<Option.Option<string>, DatabaseUnavailable>
}>()("svc/ProvisionedProfiles") {
  static readonly layer = Layer.effect(ProvisionedProfiles)(
    Effect.gen(function*() {
      const tenancy = yield* TenancyRepo
      const workspaces = yield* WorkspacesRepo
      const people = yield* PeopleRepo
      const admin = yield* AdminRepo
      const entitlements = yield* EntitlementsRepo

      const insert = Effect.fn("ProvisionedProfiles.insert")(function*(input: NewProvisionedProfile) {
        const workspaceId = (yield* workspaces.insert({
          name: input.name,
          reportingCurrency: input.reportingCurrency,
          appId: input.appId
        })).id
        const profileId = crypto.randomUUID()
        if (!(yield* tenancy.claimProvisioned(profileId, workspaceId, input))) {
          yield* workspaces.remove(workspaceId)
          return Option.none<string>()
        }
        // A brand-new profile: the upserts below insert.
        yield* admin.upsertGrant(input.appId, profileId, input.connectScopes)
        yield* entitlements.setAttribution(profileId, false)
        if (input.email !== null) {
          const user = yield* people.ensure(input.email)
          yield* workspaces.addOwner(workspaceId, user.id)
        }
        return Option.some(profileId)
      })

      return { insert }
    })
  ).pipe(Layer.provide([TenancyRepo.layer, WorkspacesRepo.layer, PeopleRepo.layer, AdminRepo.layer, EntitlementsRepo.layer]))
}
