/**
 * Syncs over HTTP (decision 0058): `POST /api/v1/connections/sync` (routes.tsv) and the progress
 * read `GET /api/v1/connections/sync/{job_id}` (designed: the spec says progress is readable with
 * `connections:read`, path not shown).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { SyncJobBody, SyncJobParams, SyncQueued, SyncRequest } from "../../../schema/connections-sync.ts"
import { DatabaseUnavailable, InvalidState, NotFound, ValidationError } from "../../../schema/errors.ts"
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
      .annotateMerge(policy({
        scopes: ["connections:write"],
        auth: PROFILE_PRINCIPALS,
        idempotency: "optional",
        grain: "profile"
      })),
    HttpApiEndpoint.get("syncProgress", "/connections/sync/:job_id", {
      params: SyncJobParams,
      success: SyncJobBody,
      error: [NotFound.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "A sync job's status and progress (phase, rows written so far, the insights window, the error code)")
      .annotateMerge(policy({
        scopes: ["connections:read"],
        auth: PROFILE_PRINCIPALS,
        idempotency: "none",
        grain: "profile"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Connection sync")
