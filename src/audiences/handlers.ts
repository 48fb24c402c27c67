import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { Audiences } from "./service.ts"

export const AudiencesHandlers = HttpApiBuilder.group(Api, "audiences", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const audiences = yield* Audiences
    return handlers.handleAll({
      setAudienceExclusions: ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: yield* audiences.setExclusions(yield* access.current, params.profileId, payload.customer_ids) }
        })
    })
  })).pipe(Layer.provide([Audiences.layer, ProfileAccess.layer]))
