import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { ChatAds } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ChatAdsApi } from "./api.ts"

export const ChatAdsHandlers = HttpApiBuilder.group(groupApi(ChatAdsApi), "chatAds", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const ads = yield* ChatAds
    return handlers.handleAll({
      listChatAds: ({ query }) => Effect.flatMap(access.current, (profile) => ads.list(profile, query)),
      getChatAdWelcome: ({ params }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(ads.welcome(profile, params.ad_id.trim()), (data) => ({ data })))
    })
  })).pipe(Layer.provide([ChatAds.layer, ProfileAccess.layer]))
