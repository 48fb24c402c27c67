/**
 * Attribution jobs over HTTP: `POST /api/v1/attribution/recompute` (path designed, routes.tsv)
 * and `GET /api/v1/tracking/replay-status`. Decision 0030.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { RecomputeAccepted, ReplayStatusBody } from "../../../schema/attribution.ts"
import { DatabaseUnavailable } from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

export const AttributionApi = HttpApiGroup.make("attribution")
  .add(
    HttpApiEndpoint.post("recompute", "/attribution/recompute", {
      success: RecomputeAccepted,
      error: DatabaseUnavailable.wire
    })
      .annotate(
        OpenApi.Summary,
        "Queue a full attribution replay of the profile (joins one already queued); 202 with the job, progress in replay-status"
      )
      .annotateMerge(policy({
        scopes: ["attribution:write"],
        auth: PROFILE_PRINCIPALS,
        idempotency: "optional",
        grain: "profile",
        entitlement: "svc_attribution"
      })),
    HttpApiEndpoint.get("replayStatus", "/tracking/replay-status", {
      success: ReplayStatusBody,
      error: DatabaseUnavailable.wire
    })
      .annotate(OpenApi.Summary, "The profile's most recent attribution replay (state, progress, total), or data: null")
      .annotateMerge(policy({
        scopes: ["analytics:read", "conversions:read"],
        scopeMode: "any",
        auth: PROFILE_PRINCIPALS,
        idempotency: "none",
        grain: "profile"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Attribution recompute and replays")
