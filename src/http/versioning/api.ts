import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { FeatureRetired, NotFound } from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../policy.ts"

const retiredPolicy = policy({ scopes: [], auth: PROFILE_PRINCIPALS, idempotency: "none", grain: "profile" })

/** Operations the deprecation table retires: they answer 410 `feature_retired` until their sunset, 404 after. */
export const RetiredApi = HttpApiGroup.make("retired")
  .add(
    HttpApiEndpoint.post("dashboardChat", "/dashboard/chat", {
      payload: Schema.Unknown,
      error: [FeatureRetired.wire, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "Dashboard chat (retired)")
      .annotate(OpenApi.Deprecated, true)
      .annotateMerge(retiredPolicy),
    HttpApiEndpoint.post("topPerformersChat", "/workspaces/:workspaceId/top-performers/chat", {
      params: { workspaceId: Schema.String },
      payload: Schema.Unknown,
      error: [FeatureRetired.wire, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "Top-performers chat (retired)")
      .annotate(OpenApi.Deprecated, true)
      .annotateMerge(retiredPolicy)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Retired operations")
