import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { DpaService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { DpaApi } from "./api.ts"

export const DpaHandlers = HttpApiBuilder.group(groupApi(DpaApi), "dpa", (handlers) =>
  Effect.gen(function*() {
    const dpa = yield* DpaService
    const data = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.map(effect, (value) => ({ data: value }))
    return handlers.handleAll({
      getAppDpa: ({ params }) => Effect.flatMap(Principal, (actor) => data(dpa.appDpa(actor, params.appId))),
      acceptAppDpa: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) => data(dpa.acceptAppDpa(actor, params.appId, payload))),
      withdrawAppDpa: ({ params }) => Effect.flatMap(Principal, (actor) => data(dpa.withdrawAppDpa(actor, params.appId))),
      getProfileAgreements: ({ params }) =>
        Effect.flatMap(Principal, (actor) => data(dpa.profileAgreements(actor, params.profileId))),
      acceptProfileDpa: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) => data(dpa.acceptProfile(actor, params.profileId, "dpa", payload))),
      withdrawProfileDpa: ({ params }) =>
        Effect.flatMap(Principal, (actor) => data(dpa.withdrawProfile(actor, params.profileId, "dpa"))),
      acceptProfileBaa: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) => data(dpa.acceptProfile(actor, params.profileId, "baa", payload))),
      withdrawProfileBaa: ({ params }) =>
        Effect.flatMap(Principal, (actor) => data(dpa.withdrawProfile(actor, params.profileId, "baa")))
    })
  })).pipe(Layer.provide(DpaService.layer))
