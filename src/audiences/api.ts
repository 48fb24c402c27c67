import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { profileErrors, UnknownCustomerRef, ValidationError } from "../../schema/errors.ts"
import { AudienceExclusionsBody, SetAudienceExclusions } from "../../schema/audiences.ts"
import { policy, PROFILE_PRINCIPALS } from "../http/policy.ts"

/** Audiences (decision 0099). */
export const AudiencesApi = HttpApiGroup.make("audiences")
  .add(
    HttpApiEndpoint.put("setAudienceExclusions", "/profiles/:profileId/audience-exclusions", {
      params: Schema.Struct({ profileId: Schema.String }),
      payload: SetAudienceExclusions,
      success: AudienceExclusionsBody,
      error: [...profileErrors, ValidationError.wire, UnknownCustomerRef.wire]
    })
      .annotate(OpenApi.Summary, "Replace the customers kept out of every audience")
      .annotate(
        OpenApi.Description,
        "customer_ids (up to 1000) replaces the whole set; an empty array clears it. An id that is not a live " +
          "customer of the profile answers 422 unknown_customer_ref and changes nothing. Idempotent."
      )
      .annotateMerge(policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" }))
  )
  .prefix("/api/v1")
