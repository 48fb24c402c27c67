/**
 * Creative analysis over HTTP (decision 0071): `POST, GET /api/v1/ads/{id}/creative-analysis`
 * (routes.tsv), `creatives:write`, entitlement-gated. POST answers 202 and queues; GET polls.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { AdIdParams, CreativeAnalysisBody, CreativeAnalysisQueued } from "../../../schema/creative-analysis.ts"
import { EntitlementRequired, profileErrors, RateLimitExceeded } from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const access = (idempotency: "optional" | "none") =>
  policy({ scopes: ["creatives:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency, entitlement: "svc_attribution" })

export const CreativeAnalysisApi = HttpApiGroup.make("creativeAnalysis")
  .add(
    HttpApiEndpoint.post("queueCreativeAnalysis", "/ads/:id/creative-analysis", {
      params: AdIdParams,
      success: CreativeAnalysisQueued,
      error: [...profileErrors, RateLimitExceeded.wire, EntitlementRequired.wire]
    })
      .annotate(OpenApi.Summary, "Queue an analysis of an ad's creative and its recent performance; 202 with the job")
      .annotate(
        OpenApi.Description,
        "Queues a durable job that computes features of the synced creative (format, media type, call to action, greeting, " +
          "welcome message, URL tagging of its clicks) and of its last 14 days (impressions, clicks, CTR, CPC, credited " +
          "conversions, cost per outcome, CTR decay), rule verdicts with `rule: {id, thresholds, inputs}` and learned values " +
          "`{value, status, reason}`. `status` moves `queued` → `running` → `succeeded` or `failed`. A repeat for the same ad " +
          "and an unchanged creative within 24 hours answers the existing job (`meta.deduplicated: true`) and consumes " +
          "nothing. Budgets: 30 calls per hour per key; 20 per profile and 100 per key per UTC day (429 " +
          "`rate_limit_exceeded` with `Retry-After`, to the next UTC midnight for a daily budget). 404 for an ad that is not " +
          "in this profile's synced ad structure. Poll with `GET` on the same path."
      )
      .annotateMerge(access("optional")),
    HttpApiEndpoint.get("pollCreativeAnalysis", "/ads/:id/creative-analysis", {
      params: AdIdParams,
      success: CreativeAnalysisBody,
      error: [...profileErrors, EntitlementRequired.wire]
    })
      .annotate(OpenApi.Summary, "The ad's latest creative analysis job: status, and the result once succeeded")
      .annotate(
        OpenApi.Description,
        "The newest job of the ad. `result` is set once `status` is `succeeded`; `error` says why a job `failed` " +
          "(`ad_not_found` when the ad left the synced structure). 404 `ad_not_found` for an ad not this profile's, " +
          "404 `analysis_not_found` before the first POST."
      )
      .annotateMerge(access("none"))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Creative analysis")
