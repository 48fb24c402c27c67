import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { checkNamedScope } from "../../kernel/scope-check.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { MessagesApi, SEND_POLICY } from "./api.ts"
import { Messages } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"

export const MessagesHandlers = HttpApiBuilder.group(groupApi(MessagesApi), "messages", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const messages = yield* Messages
    return handlers.handleAll({
      sendMessage: ({ payload }) =>
        Effect.gen(function*() {
          // The channel's own scope, from the same policy the document publishes; before anything is read or sent.
          const refused = checkNamedScope(yield* Principal, SEND_POLICY, payload.channel)
          if (refused !== undefined) return yield* refused
          const profile = yield* access.current
          return { data: yield* messages.send(profile, payload) }
        })
    })
  })).pipe(Layer.provide([Messages.layer, ProfileAccess.layer]))
