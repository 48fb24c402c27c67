import { Effect, Layer, Option, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { type DatabaseUnavailable, Unauthorized } from "../../../schema/errors.ts"
import { MeBody, MyProfilesBody } from "../../../schema/me.ts"
import { Principal, type PrincipalShape } from "../../kernel/principal.ts"
import { keyView, MeService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { MeApi } from "./api.ts"

const encodeMeBody = Schema.encodeOption(MeBody)

export const MeHandlers = HttpApiBuilder.group(groupApi(MeApi), "me", (handlers) =>
  Effect.gen(function*() {
    const me = yield* MeService
    /**
     * An API key's answer, encoded once per resolved principal: the credential store hands out the
     * same principal object until its cache entry expires, and the answer depends on nothing else.
     * The bytes are what HttpApi's encoding of the `MeBody` success gives (the same schema, then
     * JSON, as `application/json` with status 200); when the schema rejects the value, the handler
     * returns the value and HttpApi fails as it would (docs/decisions/0027-auth-path-cost.md).
     */
    const keyAnswers = new WeakMap<PrincipalShape, HttpServerResponse.HttpServerResponse>()
    const keyAnswer = (
      principal: Extract<PrincipalShape, { readonly kind: "api_key" }>
    ): Effect.Effect<HttpServerResponse.HttpServerResponse | typeof MeBody.Type> => {
      const known = keyAnswers.get(principal)
      if (known !== undefined) return Effect.succeed(known)
      const body = { data: keyView(principal) }
      const encoded = encodeMeBody(body)
      if (Option.isNone(encoded)) return Effect.succeed(body)
      const answer = HttpServerResponse.text(JSON.stringify(encoded.value), { contentType: "application/json" })
      keyAnswers.set(principal, answer)
      return Effect.succeed(answer)
    }
    // Combinators rather than Effect.gen: /me is the cheapest authenticated call, so what it costs
    // is mostly the framework's and authentication's (docs/decisions/0027-auth-path-cost.md).
    const getMe = Principal.use((principal): Effect.Effect<
      HttpServerResponse.HttpServerResponse | typeof MeBody.Type,
      Unauthorized | DatabaseUnavailable
    > =>
      principal.kind === "api_key" ? keyAnswer(principal) : Effect.flatMap(me.describe(principal), (described) =>
        Option.isSome(described)
          ? Effect.succeed({ data: described.value })
          // Authenticated from the cache a moment ago, gone now: the credential is no longer valid.
          : Effect.fail(new Unauthorized({ message: "Missing, invalid, expired or revoked credential." }))
      )
    )
    const listMyProfiles = Principal.use((principal): Effect.Effect<typeof MyProfilesBody.Type, Unauthorized | DatabaseUnavailable> =>
      principal.kind === "session"
        ? Effect.map(me.profiles(principal.userId), (data) => ({ data }))
        // Authentication admits sessions only (the operation's policy); anything else is no person.
        : Effect.fail(new Unauthorized({ message: "Missing, invalid, expired or revoked credential." }))
    )
    return handlers.handleAll({ getMe: () => getMe, listMyProfiles: () => listMyProfiles })
  })).pipe(Layer.provide(MeService.layer))
