/**
 * URL tags on ads (api-endpoints.md, quality ad-ids url-tags; decision 0088): the tracking URL
 * parameters the service recommends, set on an ad's creative at the ad platform. On the platform
 * a creative change is a new creative and restarts the ad set's learning, so the caller
 * acknowledges that, and undo puts the ad back on its previous creative.
 */
import { Schema } from "effect"
import { ActionEntry } from "./ad-actions.ts"

/** At most this many ads per apply call (api-concepts.md, Limits). */
export const URL_TAGS_MAX_ADS = 25

const AdId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))

export const UrlTagsApply = Schema.Struct({
  /** The ad platform's own ad ids, 1 to 25 (more is 422 `validation_error`); repeats count once. */
  ad_ids: Schema.Array(AdId).annotate({ description: "The ad platform's own ad ids, 1 to 25" }),
  /** Must be `true`: a new creative restarts the ad set's learning phase (else 422). */
  acknowledge_learning_reset: Schema.optionalKey(Schema.Boolean).annotate({
    description: "Must be true: each applied ad gets a new creative, which restarts its ad set's learning phase"
  })
}).annotate({ identifier: "UrlTagsApply" })
export type UrlTagsApply = typeof UrlTagsApply.Type

export const UrlTagsUndo = Schema.Struct({
  ad_id: AdId.annotate({ description: "The ad platform's own id of the ad to put back on its previous creative" })
}).annotate({ identifier: "UrlTagsUndo" })
export type UrlTagsUndo = typeof UrlTagsUndo.Type

/** Why an ad was left alone. */
export const UrlTagsSkipReason = Schema.Literals(["already_tagged", "not_found", "archived", "deleted", "not_a_link_ad"])

/** An error as the refused ad's result carries it (the envelope's fields). */
export const UrlTagsRefusal = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  reason: Schema.NullOr(Schema.String),
  provider_status: Schema.NullOr(Schema.Int),
  provider_code: Schema.NullOr(Schema.String),
  provider_message: Schema.NullOr(Schema.String)
})

export const UrlTagsResult = Schema.Struct({
  ad_id: Schema.String,
  /** `applied` (a new creative), `skipped` (nothing to do; `reason`), `refused` (the platform or a guardrail said no; `error`). */
  result: Schema.Literals(["applied", "skipped", "refused"]),
  reason: Schema.NullOr(UrlTagsSkipReason),
  /** The ledger entry of the write (roll back or undo it); null when nothing was recorded. */
  action_id: Schema.NullOr(Schema.String),
  previous_creative_id: Schema.NullOr(Schema.String),
  creative_id: Schema.NullOr(Schema.String),
  error: Schema.NullOr(UrlTagsRefusal)
}).annotate({ identifier: "UrlTagsResult" })
export type UrlTagsResult = typeof UrlTagsResult.Type

export const UrlTagsApplied = Schema.Struct({
  data: Schema.Struct({
    /** The URL parameters set on each applied ad. */
    url_tags: Schema.String,
    results: Schema.Array(UrlTagsResult),
    applied_count: Schema.Int,
    skipped_count: Schema.Int,
    refused_count: Schema.Int
  })
}).annotate({ identifier: "UrlTagsApplied" })
export type UrlTagsApplied = typeof UrlTagsApplied.Type

export const UrlTagsUndone = Schema.Struct({ data: ActionEntry }).annotate({ identifier: "UrlTagsUndone" })
export type UrlTagsUndone = typeof UrlTagsUndone.Type

/** One URL-tag change (or its rollback) of the ledger. */
export const UrlTagChange = Schema.Struct({
  action_id: Schema.String,
  ad_id: Schema.String,
  action: Schema.Literals(["url_tags", "rollback"]),
  /** The ledger state: `pending` until the platform answered, then `applied`, `no_change`, `not_reversible` or `failed`. */
  state: Schema.Literals(["pending", "applied", "no_change", "not_reversible", "failed"]),
  previous_creative_id: Schema.NullOr(Schema.String),
  creative_id: Schema.NullOr(Schema.String),
  rollback_of: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "UrlTagChange" })
export type UrlTagChange = typeof UrlTagChange.Type

export const UrlTagsStatus = Schema.Struct({
  data: Schema.Struct({
    can_apply: Schema.Boolean,
    /** Why not, when `can_apply` is false; null otherwise. */
    reason: Schema.NullOr(Schema.Literals(["entitlement_required", "no_connection", "write_permission_missing", "scope_missing"])),
    url_tags: Schema.String,
    max_ads_per_call: Schema.Int,
    /** The newest 20 changes and undos, newest first. */
    recent_changes: Schema.Array(UrlTagChange)
  })
}).annotate({ identifier: "UrlTagsStatus" })
export type UrlTagsStatus = typeof UrlTagsStatus.Type
