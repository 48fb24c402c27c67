import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  EntitlementRequired,
  IdempotencyKeyConflict,
  InvalidParameter,
  profileErrors,
  UnknownAd,
  UnknownAnswerKey,
  UnknownCustomerRef,
  ValidationError
} from "../../../schema/errors.ts"
import {
  AdReferralBatch,
  AdReferralsPreview,
  AdReferralsRecorded,
  DeclaredSourceExisting,
  DeclaredSourceRecorded,
  DeclareSource
} from "../../../schema/partner.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const common = [...profileErrors, ValidationError.wire] as const

/** Partner data writes: touches for attribution, so `attribution:write` and the add-on (decision 0033). */
const partnerWrite = policy({
  scopes: ["attribution:write"],
  auth: PROFILE_PRINCIPALS,
  grain: "profile",
  idempotency: "none",
  entitlement: "svc_attribution"
})

/** Partner data: ad referrals (and their preview) and declared source. Decision 0033. */
export const PartnerDataApi = HttpApiGroup.make("partnerData")
  .add(
    HttpApiEndpoint.post("recordAdReferrals", "/partner/ad-referrals", {
      payload: AdReferralBatch,
      success: AdReferralsRecorded,
      error: [...common, UnknownAd.wire, EntitlementRequired.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Record the ads past click-to-message conversations came from: each referral is one touch at occurred_at"
      )
      .annotate(
        OpenApi.Description,
        "1 to 500 referrals, all or nothing: an ad_id that is not one of the profile's synced ads answers 422 unknown_ad " +
          "and records none. Idempotent on each referral's idempotency_key (a repeat is counted in duplicates). " +
          "Creates no lead or outcome and sends nothing to the ad platform. Conversions whose lookback window holds a " +
          "new touch are credited again by the attribution worker (recredit_queued)."
      )
      .annotateMerge(partnerWrite),
    HttpApiEndpoint.post("previewAdReferrals", "/partner/ad-referrals/preview", {
      payload: AdReferralBatch,
      success: AdReferralsPreview,
      error: [...common, UnknownAd.wire]
    })
      .annotate(OpenApi.Summary, "Read-only: how many existing conversions a batch of up to 500 referrals would re-credit, per model")
      .annotateMerge(policy({ scopes: ["attribution:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.post("declareSource", "/partner/declared-source", {
      payload: DeclareSource,
      success: [DeclaredSourceRecorded, DeclaredSourceExisting],
      error: [
        ...common,
        InvalidParameter.wire,
        UnknownAnswerKey.wire,
        UnknownCustomerRef.wire,
        IdempotencyKeyConflict.wire,
        EntitlementRequired.wire
      ]
    })
      .annotate(OpenApi.Summary, "Record how a customer says they found the business: one answer per customer, the first stands")
      .annotate(
        OpenApi.Description,
        "201 when this call stored the answer; 200 with the stored answer for a repeat of its wamid (meta.replayed) or " +
          "when the customer had already answered (recorded: false, reason: already_answered). A national id anywhere " +
          "in the body answers 400 invalid_parameter and stores nothing."
      )
      // A national id under any key answers the spec's invalid_parameter, so unknown keys get
      // past the decoder; the service refuses the others after that check (decision 0048).
      .annotate(HttpApi.PayloadParseOptions, { onExcessProperty: "ignore" })
      .annotateMerge(partnerWrite)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Partner data: ad referrals and declared source")
