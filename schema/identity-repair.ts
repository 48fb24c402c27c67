/**
 * Identity repair and inferred identity links (`/api/v1/identity/repair-scan`,
 * `/api/v1/identity/repair`, `/api/v1/identity/links*`; decision 0039).
 *
 * A repair-scan row is one finding about the profile's live customers: a customer holding an
 * email (or phone) of which none is primary, which a backfill repairs by marking the oldest one
 * primary (the oldest whose value no other live customer holds: repair never writes an
 * identifier of a duplicate group, so a customer whose every email is shared waits for merge
 * review); or an email (or phone) value held by two or more live customers, which only a merge
 * review can settle.
 *
 * An identity link is an inferred, reviewable association between an anonymous visitor (an
 * `anonymous_id` whose touches carry no customer) and a customer, with the evidence that
 * proposed it. Click id values are never answered, only their kinds.
 */
import { Schema } from "effect"
import { CursorParam, IntegerParam, LimitParam, LiteralParam } from "./query.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

// ---------------------------------------------------------------------------------------------
// Repair scan

export const RepairIdentifierTypes = ["email", "phone"] as const
export const RepairIdentifierType = Schema.Literals(RepairIdentifierTypes)
export type RepairIdentifierType = typeof RepairIdentifierType.Type

export const RepairRowTypes = ["missing_primary_email", "missing_primary_phone", "duplicate_email", "duplicate_phone"] as const

/** How far the offset-paginated scan reaches. */
export const MAX_REPAIR_OFFSET = 1_000_000

export const RepairScanQuery = {
  offset: Schema.optionalKey(
    IntegerParam({ min: 0, max: MAX_REPAIR_OFFSET, default: 0, description: `Rows to skip: 0 (default) to ${MAX_REPAIR_OFFSET}` })
  ),
  limit: Schema.optionalKey(LimitParam(100, 50))
}
export type RepairScanQuery = Schema.Struct.Type<typeof RepairScanQuery>

/** What a backfill writes for a `missing_primary_*` row: this identifier becomes primary. */
export const RepairBackfill = Schema.Struct({
  customer_profile_id: Schema.String,
  identifier_id: Schema.String,
  identifier_type: RepairIdentifierType,
  is_primary: Schema.Literal(true)
}).annotate({ identifier: "IdentityRepairBackfill" })
export type RepairBackfill = typeof RepairBackfill.Type

export const RepairScanRow = Schema.Struct({
  type: Schema.Literals(RepairRowTypes),
  identifier_type: RepairIdentifierType,
  /** Missing primary: the value a backfill marks primary (else the oldest). Duplicate: the value the customers share. */
  value: Schema.String,
  /** One customer for a missing primary; two or more (oldest first) for a duplicate group. */
  customer_profile_ids: Schema.Array(Schema.String),
  /** `backfill_primary`: `POST /identity/repair` writes `backfill`. `merge_review`: never repaired automatically. */
  resolution: Schema.Literals(["backfill_primary", "merge_review"]),
  auto_repairable: Schema.Boolean,
  /** What a backfill would write; null for duplicate groups. */
  backfill: Schema.NullOr(RepairBackfill)
}).annotate({ identifier: "IdentityRepairScanRow" })
export type RepairScanRow = typeof RepairScanRow.Type

/** The whole scan (every page): counts beside `data`. */
export const RepairScanSummary = Schema.Struct({
  missing_primary_email_count: Count,
  missing_primary_phone_count: Count,
  duplicate_email_group_count: Count,
  duplicate_phone_group_count: Count,
  /** Backfills only: missing-primary rows with a `backfill`. */
  auto_repairable_count: Count,
  /** Informational: duplicate groups, which need a merge review; repair never acts on them. */
  auto_merge_count: Count
}).annotate({ identifier: "IdentityRepairScanSummary" })
export type RepairScanSummary = typeof RepairScanSummary.Type

export const OffsetPagination = Schema.Struct({
  has_next: Schema.Boolean,
  /** Always null: this list pages by `offset`. */
  cursor: Schema.Null,
  offset: Count,
  limit: Count,
  /** The `offset` of the next page; null on the last. */
  next_offset: Schema.NullOr(Count),
  /** Rows of the whole scan. */
  total_count: Count
}).annotate({ identifier: "OffsetPagination" })

export const RepairScanPage = Schema.Struct({
  data: Schema.Array(RepairScanRow),
  summary: RepairScanSummary,
  pagination: OffsetPagination
}).annotate({ identifier: "IdentityRepairScan" })
export type RepairScanPage = typeof RepairScanPage.Type

// ---------------------------------------------------------------------------------------------
// Repair (preview or apply)

export const RepairModes = ["preview", "apply"] as const

export const RepairRequest = Schema.Struct({
  mode: Schema.Literals(RepairModes),
  /** Only backfill these identifier types; default both. */
  identifier_types: Schema.optionalKey(
    Schema.Array(RepairIdentifierType).check(Schema.isMinLength(1), Schema.isMaxLength(2))
  )
}).annotate({ identifier: "IdentityRepairRequest" })
export type RepairRequest = typeof RepairRequest.Type

/** The most backfills one answer lists (the counts cover all of them). */
export const REPAIR_SAMPLE_SIZE = 100

export const RepairResult = Schema.Struct({
  mode: Schema.Literals(RepairModes),
  identifier_types: Schema.Array(RepairIdentifierType),
  /** Preview: backfills an apply would write now. Apply: backfills this call wrote. */
  backfill_count: Count,
  email_backfill_count: Count,
  phone_backfill_count: Count,
  /** The first 100 of them, oldest customer first (ids only, never values). */
  backfills: Schema.Array(RepairBackfill),
  has_more_backfills: Schema.Boolean,
  /** Duplicate groups of these types, left for merge review: never touched. */
  duplicate_group_count: Count,
  /** Apply wrote something (an audit event records it). Always false for a preview. */
  changed: Schema.Boolean
}).annotate({ identifier: "IdentityRepairResult" })
export type RepairResult = typeof RepairResult.Type

export const RepairAnswer = Schema.Struct({ data: RepairResult }).annotate({ identifier: "IdentityRepairAnswer" })

// ---------------------------------------------------------------------------------------------
// Inferred links

export const LinkStatuses = ["proposed", "accepted", "rejected"] as const
export const LinkStatus = Schema.Literals(LinkStatuses)
export type LinkStatus = typeof LinkStatus.Type

export const LinkEvidenceKinds = ["click_id", "anonymous_id_identifier"] as const

export const LinkEvidence = Schema.Struct({
  /**
   * `click_id`: the visitor's touches carried a click id that one of the customer's outcome
   * events carried too. `anonymous_id_identifier`: the customer holds the visitor's anonymous id
   * as an identifier.
   */
  kind: Schema.Literals(LinkEvidenceKinds),
  /** For `click_id`: which kind (e.g. `gclid`); the value is never answered. */
  click_id_kind: Schema.NullOr(Schema.String),
  /** The visitor's unbound touches carrying this evidence. */
  touch_count: Count
}).annotate({ identifier: "IdentityLinkEvidence" })
export type LinkEvidence = typeof LinkEvidence.Type

export const IdentityLink = Schema.Struct({
  id: Schema.String,
  status: LinkStatus,
  anonymous_id: Schema.String,
  customer_profile_id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  /** What accepting writes on the visitor's touches (`click_id` or `anonymous_id`). */
  join_method: Schema.Literals(["click_id", "anonymous_id"]),
  evidence: Schema.Array(LinkEvidence),
  /** The visitor's touches without a customer, at the last scan. */
  unbound_touch_count: Count,
  /** Touches bound to the customer when the link was accepted; null otherwise. */
  bound_touch_count: Schema.NullOr(Count),
  created_at: Schema.String,
  updated_at: Schema.String,
  decided_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "IdentityLink" })
export type IdentityLink = typeof IdentityLink.Type

export const LinkStatusCounts = Schema.Struct({
  proposed: Count,
  accepted: Count,
  rejected: Count
}).annotate({ identifier: "IdentityLinkStatusCounts" })
export type LinkStatusCounts = typeof LinkStatusCounts.Type

export const LinksQuery = {
  status: Schema.optionalKey(LiteralParam(LinkStatuses, "proposed, accepted or rejected; default all")),
  cursor: Schema.optionalKey(CursorParam("pagination.cursor of the previous page (one this list did not issue is 400 invalid_parameter)")),
  limit: Schema.optionalKey(LimitParam(100, 50))
}
export type LinksQuery = Schema.Struct.Type<typeof LinksQuery>

export const LinkPage = Schema.Struct({
  data: Schema.Array(IdentityLink),
  /** The whole queue, whatever `status` filters. */
  status_counts: LinkStatusCounts,
  pagination: Schema.Struct({ has_next: Schema.Boolean, cursor: Schema.NullOr(Schema.String) })
}).annotate({ identifier: "IdentityLinkPage" })
export type LinkPage = typeof LinkPage.Type

export const LinkScanResult = Schema.Struct({
  /** New proposals. */
  created_count: Count,
  /** Open proposals whose evidence changed. */
  updated_count: Count,
  /** Open proposals whose evidence is gone (touches bound since, customer merged or erased): removed. */
  withdrawn_count: Count,
  status_counts: LinkStatusCounts
}).annotate({ identifier: "IdentityLinkScan" })
export type LinkScanResult = typeof LinkScanResult.Type

export const LinkScanAnswer = Schema.Struct({ data: LinkScanResult }).annotate({ identifier: "IdentityLinkScanAnswer" })

export const LinkIdParams = { id: Schema.String.annotate({ description: "The identity link's id" }) }

export const LinkDecision = Schema.Struct({
  decision: Schema.Literals(["accept", "reject"])
}).annotate({ identifier: "IdentityLinkDecision" })
export type LinkDecision = typeof LinkDecision.Type

export const LinkDecisionAnswer = Schema.Struct({
  data: IdentityLink,
  meta: Schema.Struct({
    /** False when the link already held this decision (nothing was written). */
    changed: Schema.Boolean,
    /** Conversions of the customer queued for crediting again by this call. */
    recredit_queued_count: Count
  })
}).annotate({ identifier: "IdentityLinkDecisionAnswer" })
export type LinkDecisionAnswer = typeof LinkDecisionAnswer.Type
