/** A profile's recent API requests over HTTP (issue 33, decision 0130). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { InvalidParameter, profileErrors } from "../../../schema/errors.ts"
import { RequestLogPage, RequestLogsQuery } from "../../../schema/request-logs.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

/** The developer settings' read scope, as the webhook delivery log (decision 0130). */
const read = policy({ scopes: ["connections:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

export const RequestLogsApi = HttpApiGroup.make("requestLogs")
  .add(
    HttpApiEndpoint.get("list", "/request-logs", {
      query: RequestLogsQuery,
      success: RequestLogPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The profile's recent API requests, newest first: method, path, status, request id, duration, caller")
      .annotate(
        OpenApi.Description,
        "Every `/api/v1` call made on the profile (with an API key, a user token or a console session) in the last 7 days, " +
          "refusals by scope included, kept best-effort: entries are written in batches about a second after the answer, and " +
          "some may be missing after a database outage. The path is kept without its query string; no body, header or " +
          "secret is kept, and an API key is named by its id. Reading this list is not itself listed. Filters: `status` " +
          "(`4xx` or `404`), `method`, `path_prefix`, `request_id` (the `X-Request-Id` an answer carried); a bad one answers " +
          "400 `invalid_parameter` naming it."
      )
      .annotateMerge(read)
  )
  .prefix("/api/v1")
