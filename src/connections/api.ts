import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { PageQuery } from "../../schema/common.ts"
import { ConnectionPage } from "../../schema/connections.ts"
import { InvalidRequest, NotFound } from "../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../http/policy.ts"

export const ConnectionsApi = HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.get("listConnections", "/connections", {
      query: PageQuery,
      success: ConnectionPage,
      error: [NotFound.wire, InvalidRequest.wire]
    })
      .annotate(OpenApi.Summary, "The profile's provider connections; reports delivers_spend")
      .annotateMerge(policy({
        scopes: ["connections:read"],
        auth: PROFILE_PRINCIPALS,
        idempotency: "none",
        grain: "profile"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Connections")
