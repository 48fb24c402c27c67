import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { Principal } from "../auth/principal.ts"
import { Quickstart } from "./service.ts"

export const OnboardingHandlers = HttpApiBuilder.group(Api, "onboarding", (handlers) =>
  Effect.gen(function*() {
    const quickstart = yield* Quickstart
    return handlers.handle("quickstart", ({ payload }) =>
      Effect.map(Effect.flatMap(Principal, (actor) => quickstart.run(actor, payload.email)), (data) => ({ data })))
  })).pipe(Layer.provide(Quickstart.layer))
