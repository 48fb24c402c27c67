import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { Principal } from "../auth/principal.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { LinkTokens } from "./service.ts"

export const LinkTokensHandlers = HttpApiBuilder.group(Api, "linkTokens", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const linkTokens = yield* LinkTokens
    return handlers.handle("mintLinkTokens", ({ payload }) =>
      Effect.gen(function*() {
        return yield* linkTokens.mint(yield* Principal, yield* access.current, payload)
      }))
  })).pipe(Layer.provide([LinkTokens.layer, ProfileAccess.layer]))
