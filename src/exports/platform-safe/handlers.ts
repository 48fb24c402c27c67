import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { PlatformSafe } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { PlatformSafeApi } from "./api.ts"

export const PlatformSafeHandlers = HttpApiBuilder.group(groupApi(PlatformSafeApi), "platformSafe", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const service = yield* PlatformSafe
    const run = <A, E, R>(f: (actor: typeof Principal.Service, profile: Effect.Success<typeof access.current>) => Effect.Effect<A, E, R>) =>
      Effect.flatMap(Principal, (actor) => Effect.flatMap(access.current, (profile) => Effect.map(f(actor, profile), (data) => ({ data }))))
    return handlers.handleAll({
      provisionPlatformSafe: ({ payload }) => run((actor, profile) => service.provision(actor, profile, payload)),
      platformSafeTarget: ({ payload }) => run((actor, profile) => service.target(actor, profile, payload)),
      platformSafeRepoint: ({ payload }) => run((actor, profile) => service.repoint(actor, profile, payload))
    })
  })).pipe(Layer.provide([PlatformSafe.layer, ProfileAccess.layer]))
