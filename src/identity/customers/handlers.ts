import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { CustomersService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { CustomersApi } from "./api.ts"

export const CustomersHandlers = HttpApiBuilder.group(groupApi(CustomersApi), "customers", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const customers = yield* CustomersService
    /** The caller and the profile it acts on. */
    const caller = Effect.flatMap(Principal, (principal) => Effect.map(access.current, (profile) => ({ principal, profile })))
    return handlers.handleAll({
      conversionJourney: ({ params, query }) =>
        Effect.flatMap(caller, ({ principal, profile }) => customers.conversionJourney(principal, profile, params.id, query)),
      personJourney: ({ query }) => Effect.flatMap(caller, ({ principal, profile }) => customers.personJourney(principal, profile, query)),
      listCustomers: ({ query }) => Effect.flatMap(access.current, (profile) => customers.listCustomers(profile, query)),
      customerJourney: ({ params, query }) =>
        Effect.flatMap(caller, ({ principal, profile }) => customers.customerJourney(principal, profile, params.id, query)),
      listVisitors: ({ query }) => Effect.flatMap(access.current, (profile) => customers.listVisitors(profile, query)),
      createErasure: ({ payload }) =>
        Effect.map(Effect.flatMap(caller, ({ principal, profile }) => customers.erase(principal, profile, payload)), (data) => ({ data })),
      getErasure: ({ params }) =>
        Effect.map(Effect.flatMap(access.current, (profile) => customers.erasure(profile, params.erasure_id)), (data) => ({ data }))
    })
  })).pipe(Layer.provide([CustomersService.layer, ProfileAccess.layer]))
