import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  ConsentRequired,
  EntitlementRequired,
  InvalidState,
  PlatformSafeAudiencesDisabled,
  profileErrors,
  RateLimitExceeded,
  UnknownCustomerRef,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import {
  AudienceExclusionsBody,
  CustomerListBody,
  CustomerListBodyAnswer,
  CustomerListCreated,
  CustomerListDeleted,
  CustomerListProposal,
  CustomerListResynced,
  LookalikeBody,
  LookalikeCreated,
  LookalikeExisting,
  SetAudienceExclusions
} from "../../../schema/audiences.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const platformErrors = [
  InvalidState.wire,
  AdplatformConnectionRequired.wire,
  AdplatformWritePermissionMissing.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

// Audiences are part of the conversion-export surface: exports:read reads them, exports:write changes them,
// gated on the attribution entitlement like the other conversion-sync writes (decision 0100).
const read = policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })
const write = policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "optional", entitlement: "svc_attribution" })

/** Audiences (decisions 0099, 0100). */
export const AudiencesApi = HttpApiGroup.make("audiences")
  .add(
    HttpApiEndpoint.put("setAudienceExclusions", "/profiles/:profileId/audience-exclusions", {
      params: Schema.Struct({ profileId: Schema.String }),
      payload: SetAudienceExclusions,
      success: AudienceExclusionsBody,
      error: [...profileErrors, ValidationError.wire, UnknownCustomerRef.wire, ...platformErrors]
    })
      .annotate(OpenApi.Summary, "Replace the customers kept out of every audience")
      .annotate(
        OpenApi.Description,
        "customer_ids (up to 1000) replaces the whole set; an empty array clears it. An id that is not a live " +
          "customer of the profile answers 422 unknown_customer_ref and changes nothing. Idempotent. An enabled " +
          "customer list is re-uploaded at once; when that upload fails the set is kept and the same PUT retries it."
      )
      .annotateMerge(policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.get("getCustomerList", "/partner/audiences/customer-list", { success: CustomerListBodyAnswer, error: profileErrors })
      .annotate(OpenApi.Summary, "The profile's customer-list audience")
      .annotate(
        OpenApi.Description,
        "`status`: `disabled` (Platform-Safe profile with `platform_safe_audiences` off), `unavailable` (hipaa), `off` " +
          "(never confirmed, or deleted), `enabled`. Counts and `fields` are those of the last sync."
      )
      .annotateMerge(read),
    HttpApiEndpoint.post("postCustomerList", "/partner/audiences/customer-list", {
      payload: CustomerListBody,
      success: [CustomerListCreated, CustomerListResynced, CustomerListProposal],
      error: [
        ...profileErrors,
        ValidationError.wire,
        wireUnprocessable,
        EntitlementRequired.wire,
        PlatformSafeAudiencesDisabled.wire,
        ConsentRequired.wire,
        ...platformErrors
      ]
    })
      .annotate(OpenApi.Summary, "Propose, or confirm and upload, the paying-customers list")
      .annotate(
        OpenApi.Description,
        "Without `confirm: true`: a proposal (200) with the member, excluded and skipped counts, the hashed fields of " +
          "`consent_version` and the `consent` hint of each version; nothing written, no ad-platform call. With it: " +
          "`consent` `{version, text_hash, accepted_by, accepted_at}` (422 malformed; 409 `consent_required` for another " +
          "version or hash, or older than 24 hours), then the platform audience is created (201) or re-synced (200) by " +
          "a full replace. v1 uploads hashed email and phone; v2 adds first name, last name and country. 409 " +
          "`platform_safe_audiences_disabled` on a Platform-Safe profile until enabled in the catalog; 409 " +
          "`invalid_state` (`privacy_mode_hipaa`) on hipaa."
      )
      .annotateMerge(write),
    HttpApiEndpoint.delete("deleteCustomerList", "/partner/audiences/customer-list", {
      success: CustomerListDeleted,
      error: [...profileErrors, EntitlementRequired.wire, ...platformErrors]
    })
      .annotate(OpenApi.Summary, "Delete the platform audience and its lookalike; the list is off")
      .annotate(
        OpenApi.Description,
        "Idempotent: a second DELETE answers 200 with the same off state and calls nothing (`platform_audience` null). " +
          "When the connection holding the audience is disconnected, revoked or lacks the grant, the list is still " +
          "switched off and never synced again: `platform_audience` `{deleted: false, reason: \"connection_unusable\"}` " +
          "names the audience left on the platform. A platform outage answers the error: the same DELETE retries."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("postCustomerListLookalike", "/partner/audiences/customer-list/lookalike", {
      payload: LookalikeBody,
      success: [LookalikeCreated, LookalikeExisting],
      error: [...profileErrors, ValidationError.wire, EntitlementRequired.wire, PlatformSafeAudiencesDisabled.wire, ...platformErrors]
    })
      .annotate(OpenApi.Summary, "The 1 % lookalike of the customer list in a country")
      .annotate(
        OpenApi.Description,
        "201 when created now, 200 with the existing one (one per list). 409 `invalid_state`: `customer_list_off`, " +
          "`lookalike_source_too_small` (the platform needs 100 matched members)."
      )
      .annotateMerge(write)
  )
  .prefix("/api/v1")
