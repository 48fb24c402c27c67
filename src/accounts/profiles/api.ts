import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  DatabaseUnavailable,
  HealthcareScopeForbidden,
  InvalidState,
  NotFound,
  RateLimitExceeded,
  ServiceUnavailable,
  ValidationError
} from "../../../schema/errors.ts"
import { Schema } from "effect"
import {
  AdoptProfile,
  ArchivedProfile,
  EntitlementBody,
  SetEntitlement,
  ProfileCreated,
  ProfileReplayed,
  ProvisionProfile
} from "../../../schema/tenancy.ts"
import { policy } from "../../http/policy.ts"

const appCredential = policy({ scopes: [], auth: ["app_client"], idempotency: "none", grain: "app" })

/** Apps provision; people (`profiles:write`) create a profile in a workspace they own or administer. */
const appOrPerson = policy({ scopes: ["profiles:write"], auth: ["app_client", "user_token", "session"], idempotency: "optional", grain: "workspace" })

/** Partner provisioning, with the OAuth-app client credential over HTTP Basic. */
export const TenancyApi = HttpApiGroup.make("tenancy")
  .add(
    HttpApiEndpoint.post("provisionProfile", "/profiles", {
      payload: ProvisionProfile,
      success: [ProfileCreated, ProfileReplayed],
      error: [
        ValidationError.wire,
        NotFound.wire,
        InvalidState.wire,
        HealthcareScopeForbidden.wire,
        RateLimitExceeded.wire,
        DatabaseUnavailable.wire
      ]
    })
      .annotate(
        OpenApi.Summary,
        "Provision (or re-consent) a merchant's profile; idempotent on (client id, external_ref): 201 then 200"
      )
      .annotate(
        OpenApi.Description,
        "With an app credential: provisions the merchant's profile keyed by external_ref (workspace, profile, tracking key, " +
          "grant), and a replay re-consents. With profiles:write (user token or console session): creates a profile in " +
          "`workspace_id`, a workspace the person owns or administers; send Idempotency-Key to make retries safe."
      )
      .annotateMerge(appOrPerson),
    HttpApiEndpoint.delete("archiveProfile", "/profiles/:profileId", {
      params: { profileId: Schema.String },
      success: ArchivedProfile,
      error: [NotFound.wire, InvalidState.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Archive a provisioned profile and its workspace (memberships, keys and grants end)")
      .annotateMerge(appCredential),
    HttpApiEndpoint.post("adoptProfile", "/profiles/:profileId/adopt", {
      params: { profileId: Schema.String },
      payload: AdoptProfile,
      success: [ProfileCreated, ProfileReplayed],
      error: [NotFound.wire, InvalidState.wire, HealthcareScopeForbidden.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Stamp an external_ref on a profile provisioned without one: 201, then 200 on repeat")
      .annotateMerge(appCredential),
    HttpApiEndpoint.put("setEntitlement", "/profiles/:profileId/entitlements/:feature", {
      params: { profileId: Schema.String, feature: Schema.String },
      payload: SetEntitlement,
      success: EntitlementBody,
      error: [NotFound.wire, InvalidState.wire, ValidationError.wire, ServiceUnavailable.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Turn the attribution add-on (svc_attribution) on or off; may move the privacy mode")
      .annotateMerge(appCredential)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Partner provisioning")
