import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { meteringKeyOf, Principal } from "../auth/principal.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { CreativeAnalysis } from "./service.ts"

export const CreativeAnalysisHandlers = HttpApiBuilder.group(Api, "creativeAnalysis", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const analysis = yield* CreativeAnalysis
    return handlers.handleAll({
      queueCreativeAnalysis: ({ params }) =>
        Effect.flatMap(Principal, (principal) =>
          Effect.flatMap(access.current, (profile) => analysis.queue(profile, params.id, meteringKeyOf(principal)))),
      pollCreativeAnalysis: ({ params }) => Effect.flatMap(access.current, (profile) => analysis.poll(profile, params.id))
    })
  })).pipe(Layer.provide([CreativeAnalysis.layer, ProfileAccess.layer]))
