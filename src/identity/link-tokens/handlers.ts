import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { LinkTokens } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { LinkTokensApi } from "./api.ts"

export const LinkTokensHandlers = HttpApiBuilder.group(groupApi(LinkTokensApi), "linkTokens", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const linkTokens = yield* LinkTokens
    return handlers.handle("mintLinkTokens", ({ payload }) =>
      Effect.gen(function*() {
        return yield* linkTokens.mint(yield* Principal, yield* access.current, payload)
      }))
  })).pipe(Layer.provide([LinkTokens.layer, ProfileAccess.layer]))
