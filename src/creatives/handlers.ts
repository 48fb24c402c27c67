import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { Principal, type PrincipalShape } from "../auth/principal.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { CreativeAnalysis } from "./service.ts"

/** The credential the budgets are metered against (the spec's are per key). */
const callerOf = (principal: PrincipalShape): string => {
  switch (principal.kind) {
    case "api_key":
      return `key:${principal.keyId}`
    case "user_token":
      return `token:${principal.tokenId}`
    case "session":
      return `session:${principal.sessionId}`
    case "app_client":
      return `app:${principal.appId}`
    case "service":
      return `service:${principal.credentialId}`
    case "operator":
    case "anonymous":
      return principal.kind
  }
}

export const CreativeAnalysisHandlers = HttpApiBuilder.group(Api, "creativeAnalysis", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const analysis = yield* CreativeAnalysis
    return handlers.handleAll({
      queueCreativeAnalysis: ({ params }) =>
        Effect.flatMap(Principal, (principal) =>
          Effect.flatMap(access.current, (profile) => analysis.queue(profile, params.id, callerOf(principal)))),
      pollCreativeAnalysis: ({ params }) => Effect.flatMap(access.current, (profile) => analysis.poll(profile, params.id))
    })
  })).pipe(Layer.provide([CreativeAnalysis.layer, ProfileAccess.layer]))
