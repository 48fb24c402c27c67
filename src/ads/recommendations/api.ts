/**
 * Recommendations over HTTP (decision 0072, designed: not in routes.tsv): the list
 * (`campaigns:read`, keyset-paged, generated on read) and dismiss (`campaigns:apply`). Applying
 * (`POST /api/v1/recommendations/{id}/apply`) is built on the ad actions.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  AdsetNotEditable,
  BudgetChangeOutOfBounds,
  CampaignNotEditable,
  CampaignNotPausable,
  CampaignNotResumable,
  EntitlementRequired,
  IdempotencyKeyConflict,
  IdempotencyKeyInFlight,
  InvalidState,
  profileErrors,
  RateLimitExceeded,
  ServiceUnavailable,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import {
  ApplyRecommendation,
  RecommendationApplied,
  RecommendationBody,
  RecommendationPage,
  RecommendationParams,
  RecommendationsQuery
} from "../../../schema/recommendations.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const RULES =
  "Rules over the last 7 UTC days of spend and last-touch credited conversions: `adset.budget_increase` (at least 3 " +
  "conversions, cost per outcome at most 70 % of the profile's, spending at least 90 % of the daily budget: +20 %), " +
  "`adset.budget_decrease` (no conversion, spend at least twice the profile's cost per outcome: -50 %), " +
  "`ad.pause_no_outcomes` (no conversion, spend at least three times the profile's cost per outcome: pause). "

export const RecommendationsApi = HttpApiGroup.make("recommendations")
  .add(
    HttpApiEndpoint.get("listRecommendations", "/recommendations", {
      query: RecommendationsQuery,
      success: RecommendationPage,
      error: profileErrors
    })
      .annotate(OpenApi.Summary, "The profile's recommendations, newest first, each with its rule, target and proposed action")
      .annotate(
        OpenApi.Description,
        "Recommendations are generated when the first page is read, deterministically: the same data proposes the same ids, " +
          "never a duplicate. " + RULES + "Status: `open`; `dismissed` (stays so); `applied` (with `action_id`); `expired` " +
          "once the data no longer supports an open one (it reopens if the data does again). A connect-broker profile is " +
          "answered an empty list."
      )
      .annotateMerge(policy({ scopes: ["campaigns:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.post("dismissRecommendation", "/recommendations/:id/dismiss", {
      params: RecommendationParams,
      success: RecommendationBody,
      error: [...profileErrors, InvalidState.wire, EntitlementRequired.wire]
    })
      .annotate(OpenApi.Summary, "Dismiss an open recommendation")
      .annotate(
        OpenApi.Description,
        "An open recommendation becomes `dismissed` and is not proposed again. Dismissing a dismissed one answers it " +
          "unchanged; an `applied` or `expired` one is 409 `invalid_state`. 404 for an id not this profile's."
      )
      .annotateMerge(policy({
        scopes: ["campaigns:apply"],
        auth: PROFILE_PRINCIPALS,
        grain: "profile",
        idempotency: "optional",
        entitlement: "svc_attribution"
      })),
    HttpApiEndpoint.post("applyRecommendation", "/recommendations/:id/apply", {
      params: RecommendationParams,
      payload: ApplyRecommendation,
      success: RecommendationApplied,
      error: [
        ...profileErrors,
        InvalidState.wire,
        EntitlementRequired.wire,
        IdempotencyKeyConflict.wire,
        IdempotencyKeyInFlight.wire,
        ValidationError.wire,
        wireUnprocessable,
        BudgetChangeOutOfBounds.wire,
        AdsetNotEditable.wire,
        CampaignNotEditable.wire,
        CampaignNotPausable.wire,
        CampaignNotResumable.wire,
        AdplatformConnectionRequired.wire,
        AdplatformWritePermissionMissing.wire,
        AdplatformUnavailable.wire,
        RateLimitExceeded.wire,
        ServiceUnavailable.wire
      ]
    })
      .annotate(OpenApi.Summary, "Apply an open recommendation through the ad actions: same guardrails, ledger entry and audit")
      .annotate(
        OpenApi.Description,
        "Runs the recommendation's action (the ad set's new daily budget, or the ad's pause) exactly as the ad-action " +
          "routes do: the live object is read, +/-50 % and the floor of 100 hold, the ad platform is written once, a ledger " +
          "entry and an audit row are kept. The answer carries the recommendation (now `applied`, with `action_id`) and the " +
          "ledger entry; roll it back with `POST /api/v1/conversion-sync/actions/{action_id}/rollback`. `applied_by_basis` " +
          "is `applied_by` (the body names a person, or a signed-in person applies it) or `app_shadow_owner` (a " +
          "provisioning-app key without `applied_by`: the workspace owner). A plain profile key must name `applied_by`. " +
          "A dismissed, applied or expired recommendation is 409 `invalid_state`; an id not this profile's is 404 " +
          "(decision 0087)."
      )
      .annotateMerge(policy({
        scopes: ["campaigns:apply"],
        auth: PROFILE_PRINCIPALS,
        grain: "profile",
        idempotency: "required",
        entitlement: "svc_attribution"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Recommendations")
