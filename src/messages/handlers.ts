import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { Messages } from "./service.ts"

export const MessagesHandlers = HttpApiBuilder.group(Api, "messages", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const messages = yield* Messages
    return handlers.handleAll({
      sendMessage: ({ payload }) => Effect.flatMap(access.current, (profile) => Effect.map(messages.send(profile, payload), (sent) => ({ data: sent })))
    })
  })).pipe(Layer.provide([Messages.layer, ProfileAccess.layer]))
