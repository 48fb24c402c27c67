import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { meteringKeyOf, Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { CreativeAnalysis } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { CreativeAnalysisApi } from "./api.ts"

export const CreativeAnalysisHandlers = HttpApiBuilder.group(groupApi(CreativeAnalysisApi), "creativeAnalysis", (handlers) =>
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
