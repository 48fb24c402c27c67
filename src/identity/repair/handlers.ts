import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { IdentityRepair } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { IdentityRepairApi } from "./api.ts"

export const IdentityRepairHandlers = HttpApiBuilder.group(groupApi(IdentityRepairApi), "identityRepair", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const identity = yield* IdentityRepair
    /** The caller and the profile it acts on. */
    const caller = Effect.flatMap(Principal, (principal) => Effect.map(access.current, (profile) => ({ principal, profile })))
    return handlers.handleAll({
      repairScan: ({ query }) => Effect.flatMap(access.current, (profile) => identity.scan(profile, query)),
      repair: ({ payload }) =>
        Effect.map(Effect.flatMap(caller, ({ principal, profile }) => identity.repair(principal, profile, payload)), (data) => ({ data })),
      scanLinks: () => Effect.map(Effect.flatMap(access.current, (profile) => identity.scanLinks(profile)), (data) => ({ data })),
      listLinks: ({ query }) => Effect.flatMap(access.current, (profile) => identity.listLinks(profile, query)),
      decideLink: ({ params, payload }) =>
        Effect.flatMap(caller, ({ principal, profile }) => identity.decide(principal, profile, params.id, payload))
    })
  })).pipe(Layer.provide([IdentityRepair.layer, ProfileAccess.layer]))
