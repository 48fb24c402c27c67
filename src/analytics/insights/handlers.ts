import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../http/api.ts"
import { Principal, type PrincipalShape, type ProfileContext } from "../../auth/principal.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { InsightsService } from "./service.ts"

/** The credential a UTM scan is metered against (the spec's bucket is per key). */
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

export const InsightsHandlers = HttpApiBuilder.group(Api, "insights", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const insights = yield* InsightsService
    const withProfile = <A, E>(run: (profile: ProfileContext) => Effect.Effect<A, E>) =>
      Effect.flatMap(access.current, run)
    return handlers.handleAll({
      models: ({ query }) => withProfile((profile) => insights.models(profile, query)),
      adPeople: ({ query }) => withProfile((profile) => insights.adPeople(profile, query)),
      dimensionValues: ({ params, query }) => withProfile((profile) => insights.dimensionValues(profile, params.dimension, query)),
      quality: ({ query }) => withProfile((profile) => insights.quality(profile, query)),
      adIds: ({ query }) => withProfile((profile) => insights.adIds(profile, query)),
      refreshUtm: () =>
        Effect.flatMap(Principal, (principal) => withProfile((profile) => insights.refreshUtm(profile, callerOf(principal)))),
      touches: ({ query }) => withProfile((profile) => insights.touches(profile, query)),
      realtime: () => withProfile((profile) => insights.realtime(profile))
    })
  })).pipe(Layer.provide([InsightsService.layer, ProfileAccess.layer]))
