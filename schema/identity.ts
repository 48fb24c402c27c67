/**
 * Merge review (`/api/v1/identity/merge-*`, `/api/v1/identity/merges/{auditLogId}/undo`;
 * decision 0040). Every answer here carries both sides' identity: the routes need
 * `customers:read` and are person reads.
 */
import { Schema } from "effect"
import { Pagination } from "./common.ts"
import { CursorParam, LimitParam, LiteralParam, UuidParam } from "./query.ts"

export const ProposalStatuses = ["open", "snoozed", "merged", "dismissed", "superseded"] as const
export const ProposalStatus = Schema.Literals(ProposalStatuses)
export type ProposalStatus = typeof ProposalStatus.Type

export const Identifier = Schema.Struct({ type: Schema.String, value: Schema.String })

/** One side of a proposal or a preview: who the customer is and how much it holds. */
export const CustomerSide = Schema.Struct({
  customer_profile_id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  identifiers: Schema.Array(Identifier),
  touch_count: Schema.Number,
  conversion_count: Schema.Number,
  created_at: Schema.String
}).annotate({ identifier: "CustomerSide" })
export type CustomerSide = typeof CustomerSide.Type

export const MergeProposal = Schema.Struct({
  id: Schema.String,
  status: ProposalStatus,
  /** The identifiers both customers hold. */
  evidence: Schema.Array(Identifier),
  customers: Schema.Tuple([CustomerSide, CustomerSide]),
  created_at: Schema.String,
  decided_at: Schema.NullOr(Schema.String),
  snoozed_until: Schema.NullOr(Schema.String),
  /** The audit log id of the merge this proposal was decided with (undo it there). */
  merge_audit_log_id: Schema.NullOr(Schema.String)
}).annotate({ identifier: "MergeProposal" })
export type MergeProposal = typeof MergeProposal.Type

export const StatusCounts = Schema.Struct({
  open: Schema.Number,
  snoozed: Schema.Number,
  merged: Schema.Number,
  dismissed: Schema.Number,
  superseded: Schema.Number
})
export type StatusCounts = typeof StatusCounts.Type

export const ProposalPage = Schema.Struct({
  data: Schema.Array(MergeProposal),
  /** The whole queue of the profile, whatever the filters of this page. */
  status_counts: StatusCounts,
  pagination: Pagination
}).annotate({ identifier: "MergeProposalPage" })

export const ProposalsQuery = {
  cursor: Schema.optionalKey(CursorParam("pagination.cursor of the previous page; one this list did not issue is 400 invalid_parameter")),
  limit: Schema.optionalKey(LimitParam(100, 50)),
  status: Schema.optionalKey(LiteralParam(ProposalStatuses, `One of ${ProposalStatuses.join(", ")}; default: every status`))
}
export type ProposalsQuery = Schema.Struct.Type<typeof ProposalsQuery>

export const ProposalIdParams = { id: Schema.String }

/** What merging `merged` into `survivor` moves. */
export const MergePreview = Schema.Struct({
  survivor: CustomerSide,
  merged: CustomerSide,
  moves: Schema.Struct({
    touches: Schema.Number,
    outcome_events: Schema.Number,
    conversions: Schema.Number,
    payer_assignments: Schema.Number,
    identifiers: Schema.Number,
    /** Identifiers the survivor already holds: hidden on the merged side (restored by an undo). */
    duplicate_identifiers: Schema.Number,
    declared_sources: Schema.Number
  })
}).annotate({ identifier: "MergePreview" })
export type MergePreview = typeof MergePreview.Type

export const MergePreviewAnswer = Schema.Struct({ data: MergePreview }).annotate({ identifier: "MergePreviewAnswer" })

export const MergePreviewQuery = {
  a: UuidParam("customer_profile_id of one customer"),
  b: UuidParam("customer_profile_id of the other (not a)"),
  survivor: Schema.optionalKey(UuidParam("Which of the two survives (a or b); default the older"))
}
export type MergePreviewQuery = Schema.Struct.Type<typeof MergePreviewQuery>

export const Decision = Schema.Struct({
  decision: Schema.Literals(["merge", "dismiss", "snooze"]),
  /** merge: which of the two survives; default the older. */
  survivor_customer_profile_id: Schema.optionalKey(Schema.String),
  /** snooze: until when (ISO 8601 with offset); default 30 days from now. */
  snooze_until: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "MergeDecision" })
export type Decision = typeof Decision.Type

export const DecisionAnswer = Schema.Struct({
  data: MergeProposal,
  meta: Schema.Struct({ changed: Schema.Boolean })
}).annotate({ identifier: "MergeDecisionAnswer" })

export const ScanAnswer = Schema.Struct({
  data: Schema.Struct({
    /** Pairs of live customers sharing an identifier, seen by this scan. */
    pairs: Schema.Number,
    /** New proposals written (pairs already proposed, merged or dismissed are left as they are). */
    proposed: Schema.Number,
    customers_scanned: Schema.Number
  })
}).annotate({ identifier: "MergeScanAnswer" })

export const MergeHistoryEntry = Schema.Struct({
  audit_log_id: Schema.String,
  survivor_customer_profile_id: Schema.String,
  merged_customer_profile_id: Schema.String,
  merged_customer_key: Schema.NullOr(Schema.String),
  proposal_id: Schema.NullOr(Schema.String),
  merged_at: Schema.String,
  undone_at: Schema.NullOr(Schema.String),
  moved: Schema.Struct({
    touches: Schema.Number,
    outcome_events: Schema.Number,
    conversions: Schema.Number,
    identifiers: Schema.Number
  })
}).annotate({ identifier: "MergeHistoryEntry" })
export type MergeHistoryEntry = typeof MergeHistoryEntry.Type

export const MergeHistory = Schema.Struct({ data: Schema.Array(MergeHistoryEntry) }).annotate({ identifier: "MergeHistory" })

/** Exactly one of the two. */
export const MergeHistoryQuery = {
  customer_profile_id: Schema.optionalKey(UuidParam("The customer's customer_profile_id")),
  customer_key: Schema.optionalKey(Schema.String.annotate({ description: "The external_id the customer's events were sent with" }))
}
export type MergeHistoryQuery = Schema.Struct.Type<typeof MergeHistoryQuery>

export const UndoParams = { auditLogId: Schema.String }

export const UndoAnswer = Schema.Struct({
  data: MergeHistoryEntry,
  meta: Schema.Struct({ changed: Schema.Boolean })
}).annotate({ identifier: "MergeUndoAnswer" })
