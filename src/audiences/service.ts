import { Context, Effect, Layer } from "effect"
import { type DatabaseUnavailable, NotFound, UnknownCustomerRef } from "../../schema/errors.ts"
import type { ProfileContext } from "../auth/principal.ts"
import { AudiencesRepo } from "./repo.ts"

/** Audiences (decision 0099): customers a profile keeps out of every audience. */
export class Audiences extends Context.Service<Audiences, {
  readonly setExclusions: (
    profile: ProfileContext,
    pathProfileId: string,
    customerIds: ReadonlyArray<string>
  ) => Effect.Effect<{ readonly profile_id: string; readonly customer_ids: ReadonlyArray<string> }, NotFound | UnknownCustomerRef | DatabaseUnavailable>
}>()("svc/Audiences") {
  static readonly layer = Layer.effect(Audiences)(
    Effect.gen(function*() {
      const repo = yield* AudiencesRepo
      const setExclusions = Effect.fn("Audiences.setExclusions")(function*(
        profile: ProfileContext,
        pathProfileId: string,
        customerIds: ReadonlyArray<string>
      ) {
        // The caller acts on its own profile only; any other id answers as unknown.
        if (pathProfileId !== profile.profileId) {
          return yield* new NotFound({ message: "Unknown profile." })
        }
        const unique = [...new Set(customerIds)]
        const live = new Set(yield* repo.liveCustomers(profile.profileId, unique))
        const unknown = unique.filter((id) => !live.has(id))
        if (unknown.length > 0) {
          return yield* new UnknownCustomerRef({ message: `Unknown customer ids: ${unknown.slice(0, 10).join(", ")}.` })
        }
        const ids = yield* repo.replaceExclusions(profile.profileId, unique)
        return { profile_id: profile.profileId, customer_ids: ids }
      })
      return { setExclusions }
    })
  ).pipe(Layer.provide(AudiencesRepo.layer))
}
