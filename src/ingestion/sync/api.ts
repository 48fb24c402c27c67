/**
 * Syncs over HTTP (decision 0058): `POST /api/v1/connections/sync` (routes.tsv) and the progress
 * reads `GET /api/v1/connections/sync[/{job_id}]` (designed: the spec says progress is readable
 * with `connections:read`, path not shown).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { SyncJobBody, SyncJobPage, SyncJobParams, SyncJobsQuery, SyncQueued, SyncRequest } from "../../../schema/connections-sync.ts"
import { DatabaseUnavailable, InvalidRequest, InvalidState, NotFound, ValidationError } from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

export const ConnectionSyncApi = HttpApiGroup.make("connectionSync")
  .add(
    HttpApiEndpoint.post("triggerSync", "/connections/sync", {
      payload: SyncRequest,
      success: SyncQueued,
      error: [NotFound.wire, InvalidState.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Queue a sync of one connection (connection_id) or of every live ad-platform connection; 202 with the jobs (a job already queued or running is joined)"
      )
      .annotate(
        OpenApi.Description,
        "Queues a sync job per connection: `manual` (default) copies the structure (campaigns, ad sets, ads, creatives) and, while the " +
          "attribution add-on is on, the recent days of insights and spend; `structure` or `insights` alone. Structure syncs whatever " +
          "the add-on says; insights never while it is off (the job is cancelled `attribution_disabled`). A job of the same kind already " +
          "queued or running on the connection is answered instead of a second. 404 for a connection that is not a live one of the " +
          "profile; 409 `invalid_state` for one awaiting a reconnect or of a provider this sync does not cover. Progress: " +
          "`GET /api/v1/connections/sync/{job_id}`."
      )
      .annotateMerge(policy({
        scopes: ["connections:write"],
        auth: PROFILE_PRINCIPALS,
        idempotency: "optional",
        grain: "profile"
      })),
    HttpApiEndpoint.get("listSyncJobs", "/connections/sync", {
      query: SyncJobsQuery,
      success: SyncJobPage,
      error: [InvalidRequest.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The profile's sync jobs, newest first (optionally of one connection), with status and progress")
      .annotate(
        OpenApi.Description,
        "Every sync job of the profile (requested, nightly, backfill), newest first, keyset-paged; `connection_id` keeps one " +
          "connection's. Each job as `GET /api/v1/connections/sync/{job_id}` shows it."
      )
      .annotateMerge(policy({
        scopes: ["connections:read"],
        auth: PROFILE_PRINCIPALS,
        idempotency: "none",
        grain: "profile"
      })),
    HttpApiEndpoint.get("syncProgress", "/connections/sync/:job_id", {
      params: SyncJobParams,
      success: SyncJobBody,
      error: [NotFound.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "A sync job's status and progress (phase, rows written so far, the insights window, the error code)")
      .annotate(
        OpenApi.Description,
        "`status` moves `queued` → `running` → `done`, `failed` or `cancelled`. A throttled or unavailable provider queues the job " +
          "again (`error` says why, `run_after` when it is next tried; `attempts` counts tries). `failed` for good: " +
          "`reconnect_required` (the connection must be reconnected), `permission_missing`, `provider_refused`. `progress` counts the " +
          "rows written by the current attempt: campaigns, ad sets, ads and insight rows (ad platform); products, orders and newly " +
          "written milestones (commerce); deals (CRM); payments (card gateway). A commerce job taken over after a crash resumes " +
          "where its last written batch ended. 404 for a job of another profile."
      )
      .annotateMerge(policy({
        scopes: ["connections:read"],
        auth: PROFILE_PRINCIPALS,
        idempotency: "none",
        grain: "profile"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Connection sync")
