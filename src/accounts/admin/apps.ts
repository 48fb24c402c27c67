/**
 * The registered apps as the layers above read them: an OAuth app's registration (its return
 * origins) and a merchant's commerce app as the OAuth client of a hand-off or a token refresh.
 * Reads only; the admin routes change them (./service.ts).
 */
import { Context, Effect, Layer, type Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { AdminRepo, type CommerceAppCredentials, type OAuthAppRow } from "./repo.ts"

export type { CommerceAppCredentials, OAuthAppRow }

type Read<A> = Effect.Effect<A, DatabaseUnavailable>

export class RegisteredApps extends Context.Service<RegisteredApps, {
  /** The live (not deleted) OAuth app by id. */
  readonly findApp: (id: string) => Read<Option.Option<OAuthAppRow>>
  /** The commerce app, if it is still live (not disabled by the kill switch). */
  readonly liveCommerceApp: (id: string) => Read<Option.Option<CommerceAppCredentials>>
  /** The live commerce app registered for the store (its handle), if any. */
  readonly liveCommerceAppForShop: (shop: string) => Read<Option.Option<CommerceAppCredentials>>
}>()("svc/RegisteredApps") {
  static readonly layer = Layer.effect(RegisteredApps)(
    Effect.gen(function*() {
      const repo = yield* AdminRepo
      return {
        findApp: Effect.fn("RegisteredApps.findApp")(function*(id: string) {
          return yield* repo.findApp(id)
        }),
        liveCommerceApp: Effect.fn("RegisteredApps.liveCommerceApp")(function*(id: string) {
          return yield* repo.liveCommerceApp(id)
        }),
        liveCommerceAppForShop: Effect.fn("RegisteredApps.liveCommerceAppForShop")(function*(shop: string) {
          return yield* repo.liveCommerceAppForShop(shop)
        })
      }
    })
  ).pipe(Layer.provide(AdminRepo.layer))
}
