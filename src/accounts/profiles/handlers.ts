import { Effect, Layer } from "effect"
import { isUuid } from "../../../schema/common.ts"
import { NotFound, ValidationError } from "../../../schema/errors.ts"
import { HttpApiBuilder } from "effect/http-api"
import { appPrincipal, Principal } from "../../kernel/principal.ts"
import type { ProvisionedProfile } from "../../../schema/tenancy.ts"
import { Provisioning } from "./service.ts"
import { EntitlementSwitch } from "./set-entitlement.ts"
import { groupApi } from "../../http/group-api.ts"
import { TenancyApi } from "./api.ts"

/** Fields only a partner app sends, and fields only a person sends (see `ProvisionProfile`). */
const PARTNER_FIELDS = ["external_ref", "scopes", "email", "reporting_currency", "privacy_mode"] as const
const PERSON_FIELDS = ["workspace_id", "time_zone"] as const

const notAccepted = (field: string, credential: string) =>
  new ValidationError({ message: `body.${field}: not accepted with ${credential}` })

/** The flag picks the answer's status: 201 when this call created, 200 otherwise. */
const createdOrReplayed = (data: ProvisionedProfile) =>
  data.created ? { data: { ...data, created: true as const } } : { data: { ...data, created: false as const } }

export const TenancyHandlers = HttpApiBuilder.group(groupApi(TenancyApi), "tenancy", (handlers) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning
    const entitlements = yield* EntitlementSwitch
    return handlers.handleAll({
      provisionProfile: ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          if (principal.kind === "app_client") {
            const { external_ref, ...rest } = payload
            const personOnly = PERSON_FIELDS.find((field) => payload[field] !== undefined)
            if (personOnly !== undefined) return yield* notAccepted(personOnly, "an app credential")
            if (external_ref === undefined) return yield* new ValidationError({ message: "body.external_ref: required with an app credential" })
            return createdOrReplayed(yield* provisioning.provision(principal, { ...rest, external_ref }))
          }
          if (principal.kind !== "user_token" && principal.kind !== "session") {
            return yield* Effect.die(`provisionProfile reached by ${principal.kind}`)
          }
          const partnerOnly = PARTNER_FIELDS.find((field) => payload[field] !== undefined)
          if (partnerOnly !== undefined) return yield* notAccepted(partnerOnly, "a person's credential")
          if (payload.workspace_id === undefined) return yield* new ValidationError({ message: "body.workspace_id: required" })
          if (payload.name === undefined || payload.name.trim() === "") return yield* new ValidationError({ message: "body.name: required" })
          return createdOrReplayed(yield* provisioning.createForPerson(principal, {
            workspaceId: payload.workspace_id,
            name: payload.name.trim(),
            currency: payload.currency,
            timeZone: payload.time_zone
          }))
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
          return yield* entitlements.set(app, params.profileId.toLowerCase(), payload)
        }),
      adoptProfile: ({ params, payload }) =>
        Effect.gen(function*() {
          return createdOrReplayed(yield* provisioning.adopt(yield* appPrincipal, params.profileId, payload))
        })
    })
  })).pipe(Layer.provide([Provisioning.layer, EntitlementSwitch.layer]))
