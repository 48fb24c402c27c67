import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { Quickstart } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { OnboardingApi } from "./api.ts"

export const OnboardingHandlers = HttpApiBuilder.group(groupApi(OnboardingApi), "onboarding", (handlers) =>
  Effect.gen(function*() {
    const quickstart = yield* Quickstart
    return handlers.handle("quickstart", ({ payload }) =>
      Effect.map(Effect.flatMap(Principal, (actor) => quickstart.run(actor, payload.email)), (data) => ({ data })))
  })).pipe(Layer.provide(Quickstart.layer))
