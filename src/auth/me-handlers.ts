import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Unauthorized } from "../../schema/errors.ts"
import { Api } from "../http/api.ts"
import { Principal } from "../http/auth.ts"
import { MeService } from "./me-service.ts"

export const MeHandlers = HttpApiBuilder.group(Api, "me", (handlers) =>
  Effect.gen(function*() {
    const me = yield* MeService
    // Combinators rather than Effect.gen: /me is the cheapest authenticated call, so what it costs
    // is mostly the framework's and authentication's (docs/decisions/0027-auth-path-cost.md).
    const getMe = Principal.use((principal) =>
      Effect.flatMap(me.describe(principal), (described) =>
        Option.isSome(described)
          ? Effect.succeed({ data: described.value })
          // Authenticated from the cache a moment ago, gone now: the credential is no longer valid.
          : Effect.fail(new Unauthorized({ message: "Missing, invalid, expired or revoked credential." }))
      )
    )
    return handlers.handleAll({ getMe: () => getMe })
  }))
