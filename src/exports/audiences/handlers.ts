import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { Audiences, CustomerLists } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { AudiencesApi } from "./api.ts"

export const AudiencesHandlers = HttpApiBuilder.group(groupApi(AudiencesApi), "audiences", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const audiences = yield* Audiences
    const lists = yield* CustomerLists
    return handlers.handleAll({
      setAudienceExclusions: ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: yield* audiences.setExclusions(yield* access.current, params.profileId, payload.customer_ids) }
        }),
      getCustomerList: () => Effect.gen(function*() {
        return { data: yield* lists.get(yield* access.current) }
      }),
      postCustomerList: ({ payload }) =>
        Effect.gen(function*() {
          const answer = yield* lists.post(yield* Principal, yield* access.current, payload)
          if (answer.kind === "proposal") return { data: answer.proposal }
          // The flag picks the status: 201 when this call switched the list on, 200 for a re-sync.
          return answer.created ? { data: { ...answer.state, created: true as const } } : { data: { ...answer.state, created: false as const } }
        }),
      deleteCustomerList: () =>
        Effect.gen(function*() {
          return { data: yield* lists.remove(yield* Principal, yield* access.current) }
        }),
      postCustomerListLookalike: ({ payload }) =>
        Effect.gen(function*() {
          const { created, ...rest } = yield* lists.lookalike(yield* Principal, yield* access.current, payload.country)
          return created ? { data: { ...rest, created: true as const } } : { data: { ...rest, created: false as const } }
        })
    })
  })).pipe(Layer.provide([Audiences.layer, CustomerLists.layer, ProfileAccess.layer]))
