/**
 * Recommendations over HTTP (decision 0072, designed: not in routes.tsv): the list
 * (`campaigns:read`, keyset-paged, generated on read) and dismiss (`campaigns:apply`). Applying
 * (`POST /api/v1/recommendations/{id}/apply`) is built on the ad actions.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { EntitlementRequired, InvalidState, profileErrors } from "../../schema/errors.ts"
import { RecommendationBody, RecommendationPage, RecommendationParams, RecommendationsQuery } from "../../schema/recommendations.ts"
import { policy, PROFILE_PRINCIPALS } from "../http/policy.ts"

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
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Recommendations")
