import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { Principal } from "../http/auth.ts"
import { Provisioning } from "./service.ts"

export const TenancyHandlers = HttpApiBuilder.group(Api, "tenancy", (handlers) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning
    return handlers.handleAll({
      provisionProfile: ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          // The policy admits only app clients; the narrowing is for the type checker.
          if (principal.kind !== "app_client") return yield* Effect.die("provisioning reached by a non-app principal")
          const data = yield* provisioning.provision(principal, payload)
          return data.created ? { data: { ...data, created: true as const } } : { data: { ...data, created: false as const } }
        })
    })
  }))
