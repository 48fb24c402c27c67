import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { Principal } from "../http/auth.ts"
import type { ProvisionedProfile } from "../../schema/tenancy.ts"
import { Provisioning } from "./service.ts"

/** The policy admits only app clients; this narrows the principal for the type checker. */
const appPrincipal = Effect.flatMap(Principal, (principal) =>
  principal.kind === "app_client" ? Effect.succeed(principal) : Effect.die("partner route reached by a non-app principal"))

/** The flag picks the answer's status: 201 when this call created, 200 otherwise. */
const createdOrReplayed = (data: ProvisionedProfile) =>
  data.created ? { data: { ...data, created: true as const } } : { data: { ...data, created: false as const } }

export const TenancyHandlers = HttpApiBuilder.group(Api, "tenancy", (handlers) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning
    return handlers.handleAll({
      provisionProfile: ({ payload }) =>
        Effect.gen(function*() {
          return createdOrReplayed(yield* provisioning.provision(yield* appPrincipal, payload))
        }),
      archiveProfile: ({ params }) =>
        Effect.gen(function*() {
          const result = yield* provisioning.archive(yield* appPrincipal, params.profileId)
          return {
            data: {
              profile_id: result.profileId,
              workspace_id: result.workspaceId,
              archived: true as const,
              workspace_archived: result.workspaceArchived
            }
          }
        }),
      adoptProfile: ({ params, payload }) =>
        Effect.gen(function*() {
          return createdOrReplayed(yield* provisioning.adopt(yield* appPrincipal, params.profileId, payload))
        })
    })
  }))
