import { Effect } from "effect"
import { routeProfileCall } from "../../cluster/calls.ts"
import { Profile } from "../../cluster/Profile.ts"
import { isUuid } from "../../schema/common.ts"
import { NotFound } from "../../schema/errors.ts"
import { CurrentRequestId } from "../platform/request-id.ts"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { appPrincipal } from "../http/auth.ts"
import type { ProvisionedProfile } from "../../schema/tenancy.ts"
import { Provisioning } from "./service.ts"

/** The flag picks the answer's status: 201 when this call created, 200 otherwise. */
const createdOrReplayed = (data: ProvisionedProfile) =>
  data.created ? { data: { ...data, created: true as const } } : { data: { ...data, created: false as const } }

export const TenancyHandlers = HttpApiBuilder.group(Api, "tenancy", (handlers) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning
    const profiles = yield* Profile.client
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
      setEntitlement: ({ params, payload }) =>
        Effect.gen(function*() {
          const app = yield* appPrincipal
          if (params.feature !== "svc_attribution" || !isUuid(params.profileId)) {
            return yield* new NotFound({ message: params.feature === "svc_attribution" ? "No such profile." : "No such feature." })
          }
          const profileId = params.profileId.toLowerCase()
          // Through the Profile entity: changes of one profile happen one at a time, on its runner.
          const result = yield* routeProfileCall(
            profiles(profileId).SetEntitlement({
              app_id: app.appId,
              client_id: app.clientId,
              request_id: yield* CurrentRequestId,
              enabled: payload.enabled,
              ...(payload.privacy_mode === undefined ? {} : { privacy_mode: payload.privacy_mode })
            }),
            "outcome_unknown"
          )
          return {
            data: { profile_id: result.profile_id, feature: result.feature, enabled: result.enabled, changed: result.changed },
            meta: { profile_id: result.profile_id },
            ...(result.revoked_keys === undefined || result.privacy_mode === undefined
              ? {}
              : { grant: { revoked_keys: result.revoked_keys, privacy_mode: result.privacy_mode } })
          }
        }),
      adoptProfile: ({ params, payload }) =>
        Effect.gen(function*() {
          return createdOrReplayed(yield* provisioning.adopt(yield* appPrincipal, params.profileId, payload))
        })
    })
  }))
