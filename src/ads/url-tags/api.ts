/**
 * URL tags over HTTP (routes.tsv "Analytics reads": quality ad-ids url-tags; decision 0088): the
 * writes need `campaigns:apply`, an `Idempotency-Key` (an ad write: 24-hour replay) and the
 * attribution add-on; the read says whether the profile can apply and lists recent changes.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdplatformConnectionRequired,
  AdplatformWritePermissionMissing,
  EntitlementRequired,
  IdempotencyKeyConflict,
  IdempotencyKeyInFlight,
  profileErrors,
  ServiceUnavailable,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { UrlTagsApplied, UrlTagsApply, UrlTagsStatus, UrlTagsUndo, UrlTagsUndone } from "../../../schema/url-tags.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"
import { actionErrors } from "../actions/api.ts"
import { TRACKING_URL_TAGS } from "./service.ts"

const write = policy({
  scopes: ["campaigns:apply"],
  auth: PROFILE_PRINCIPALS,
  idempotency: "required",
  grain: "profile",
  entitlement: "svc_attribution"
})

const writeErrors = [
  ...profileErrors,
  EntitlementRequired.wire,
  IdempotencyKeyConflict.wire,
  IdempotencyKeyInFlight.wire,
  ValidationError.wire,
  wireUnprocessable,
  AdplatformConnectionRequired.wire,
  AdplatformWritePermissionMissing.wire,
  ServiceUnavailable.wire
] as const

export const UrlTagsApi = HttpApiGroup.make("urlTags")
  .add(
    HttpApiEndpoint.get("urlTagsStatus", "/quality/ad-ids/url-tags", { success: UrlTagsStatus, error: profileErrors })
      .annotate(OpenApi.Summary, "Whether the profile can apply URL tags (manage-ads grant and campaigns:apply), the tags, and recent changes")
      .annotate(
        OpenApi.Description,
        "`can_apply` is true when the attribution add-on is on, a usable ad-platform connection holds the " +
          "manage-advertisements grant, and the caller holds `campaigns:apply`; otherwise `reason` names the first " +
          "missing one (`entitlement_required`, `no_connection`, `write_permission_missing`, `scope_missing`). " +
          "`url_tags` is what apply sets: `" + TRACKING_URL_TAGS + "`. `recent_changes` lists the newest 20 URL-tag " +
          "changes and undos from the action ledger, newest first."
      )
      .annotateMerge(policy({ scopes: ["analytics:read"], auth: PROFILE_PRINCIPALS, idempotency: "none", grain: "profile" })),
    HttpApiEndpoint.post("applyUrlTags", "/quality/ad-ids/url-tags/apply", {
      payload: UrlTagsApply,
      success: UrlTagsApplied,
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Set the tracking URL tags on up to 25 ads (a new creative each; learning restarts); a result per ad")
      .annotate(
        OpenApi.Description,
        "Requires `acknowledge_learning_reset: true` (else 422 `validation_error`) and 1 to 25 `ad_ids` (else 422). " +
          "On the ad platform a creative's URL tags cannot change in place: each applied ad is put on a new creative " +
          "carrying the tags, which restarts its ad set's learning phase. Per ad: `applied` (with `previous_creative_id`, " +
          "`creative_id` and the ledger's `action_id`), `skipped` with `reason` (`already_tagged`, `not_found`, " +
          "`archived`, `deleted`, `not_a_link_ad`), or `refused` with the platform's `error`. Refused as a whole before " +
          "any ad is read: no usable connection (409 `adplatform_connection_required`), no manage-ads grant (403 " +
          "`adplatform_write_permission_missing`). Writes to one ad set run one after the other; each write leaves a " +
          "ledger entry and an audit row. Undo one with `POST /api/v1/quality/ad-ids/url-tags/undo` or the rollback route."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("undoUrlTags", "/quality/ad-ids/url-tags/undo", {
      payload: UrlTagsUndo,
      success: UrlTagsUndone,
      // A rollback underneath: any refusal of the ad actions.
      error: actionErrors
    })
      .annotate(OpenApi.Summary, "Put an ad back on the creative it carried before its last URL-tag change")
      .annotate(
        OpenApi.Description,
        "Rolls back the ad's newest applied URL-tag change not undone yet (404 when there is none): while the ad still " +
          "carries the creative that change put it on, the previous creative is put back (learning restarts again) and " +
          "the `rollback` ledger entry is answered; otherwise 200 with `outcome: not_reversible` and `reason_code: " +
          "state_drifted`, nothing written. An archived or deleted ad is 409 `invalid_state`."
      )
      .annotateMerge(write)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "URL tags on ads")
