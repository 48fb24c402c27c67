import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { ChatTemplates } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ChatTemplatesApi } from "./api.ts"

export const ChatTemplatesHandlers = HttpApiBuilder.group(groupApi(ChatTemplatesApi), "chatTemplates", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const templates = yield* ChatTemplates
    return handlers.handleAll({
      listChatTemplates: ({ query }) => Effect.flatMap(access.current, (profile) => Effect.map(templates.list(profile, query), (data) => ({ data }))),
      createChatTemplate: ({ payload }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(templates.create(profile, payload), (data) => ({ data }))),
      getChatTemplateAnalytics: ({ params, query }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(templates.analytics(profile, params.name.trim(), query), (data) => ({ data })))
    })
  })).pipe(Layer.provide([ChatTemplates.layer, ProfileAccess.layer]))
