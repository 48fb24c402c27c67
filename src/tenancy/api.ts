import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  DatabaseUnavailable,
  HealthcareScopeForbidden,
  InvalidState,
  RateLimitExceeded,
  ValidationError,
  wire
} from "../../schema/errors.ts"
import { ProfileCreated, ProfileReplayed, ProvisionProfile } from "../../schema/tenancy.ts"
import { policy } from "../http/policy.ts"

/** Partner provisioning, with the OAuth-app client credential over HTTP Basic. */
export const TenancyApi = HttpApiGroup.make("tenancy")
  .add(
    HttpApiEndpoint.post("provisionProfile", "/profiles", {
      payload: ProvisionProfile,
      success: [ProfileCreated, ProfileReplayed],
      error: [
        wire(ValidationError),
        wire(InvalidState),
        wire(HealthcareScopeForbidden),
        wire(RateLimitExceeded),
        wire(DatabaseUnavailable)
      ]
    })
      .annotate(
        OpenApi.Summary,
        "Provision (or re-consent) a merchant's profile; idempotent on (client id, external_ref): 201 then 200"
      )
      .annotateMerge(policy({ scopes: [], auth: ["app_client"], idempotency: "none", grain: "app" }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Partner provisioning")
