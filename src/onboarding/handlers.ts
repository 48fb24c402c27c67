import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { Definitions } from "../attribution/definitions/service.ts"
import { ApiKeysService } from "../auth/api-keys/service.ts"
import { Principal } from "../auth/principal.ts"
import { Sessions } from "../auth/sessions/service.ts"
import { People } from "../people/service.ts"
import { Provisioning } from "../tenancy/profiles/service.ts"
import { Workspaces } from "../tenancy/workspaces/service.ts"
import { TrackingService } from "../tracking/tracker/service.ts"
import { Quickstart } from "./service.ts"

export const OnboardingHandlers = HttpApiBuilder.group(Api, "onboarding", (handlers) =>
  Effect.gen(function*() {
    const quickstart = yield* Quickstart
    return handlers.handle("quickstart", ({ payload }) =>
      Effect.map(Effect.flatMap(Principal, (actor) => quickstart.run(actor, payload.email)), (data) => ({ data })))
  })).pipe(
    Layer.provide(Quickstart.layer),
    // Quickstart is built on the domain services (decision 0053).
    Layer.provide(People.layer),
    Layer.provide([Sessions.layer, Workspaces.layer, Provisioning.layer, TrackingService.layer, Definitions.layer, ApiKeysService.layer])
  )
