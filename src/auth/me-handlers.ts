import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Unauthorized } from "../../schema/errors.ts"
import { Api } from "../http/api.ts"
import { Principal } from "../http/auth.ts"
import { MeService } from "./me-service.ts"

export const MeHandlers = HttpApiBuilder.group(Api, "me", (handlers) =>
  Effect.gen(function*() {
    const me = yield* MeService
    return handlers.handleAll({
      getMe: () =>
        Effect.gen(function*() {
          const described = yield* me.describe(yield* Principal)
          return yield* Option.match(described, {
            // Authenticated from the cache a moment ago, gone now: the credential is no longer valid.
            onNone: () => Effect.fail(new Unauthorized({ message: "Missing, invalid, expired or revoked credential." })),
            onSome: (data) => Effect.succeed({ data })
          })
        })
    })
  }))
