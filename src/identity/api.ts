/**
 * Merge review over HTTP (decision 0040). Every answer carries both sides' identity: the reads
 * need `customers:read` and are person reads (PII access log); the writes also need
 * `attribution:write`, since a merge or an undo re-credits attribution.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CustomerNotFound,
  InvalidParameter,
  InvalidState,
  profileErrors,
  ValidationError
} from "../../schema/errors.ts"
import {
  Decision,
  DecisionAnswer,
  MergeHistory,
  MergeHistoryQuery,
  MergePreviewAnswer,
  MergePreviewQuery,
  ProposalIdParams,
  ProposalPage,
  ProposalsQuery,
  ScanAnswer,
  UndoAnswer,
  UndoParams
} from "../../schema/identity.ts"
import { policy, PROFILE_PRINCIPALS } from "../http/policy.ts"

const common = [...profileErrors, InvalidParameter.wire] as const

const read = policy({ scopes: ["customers:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none", personData: true })
const write = policy({
  scopes: ["customers:read", "attribution:write"],
  auth: PROFILE_PRINCIPALS,
  grain: "profile",
  idempotency: "none",
  personData: true
})

export const IdentityApi = HttpApiGroup.make("identity")
  .add(
    HttpApiEndpoint.post("scanMergeProposals", "/identity/merge-proposals/scan", { success: ScanAnswer, error: common })
      .annotate(OpenApi.Summary, "Re-run the proposer: every pair of live customers sharing an identifier gets a proposal (dismissed pairs stay dismissed)")
      .annotateMerge(write),
    HttpApiEndpoint.get("listMergeProposals", "/identity/merge-proposals", {
      query: ProposalsQuery,
      success: ProposalPage,
      error: common
    })
      .annotate(OpenApi.Summary, "The merge review queue, newest first, with status_counts of the whole queue whatever the filters; no total")
      .annotateMerge(read),
    HttpApiEndpoint.get("previewMergeProposal", "/identity/merge-proposals/:id/preview", {
      params: ProposalIdParams,
      success: MergePreviewAnswer,
      error: [...common, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "What merging the proposal's pair would move (the older customer survives)")
      .annotateMerge(read),
    HttpApiEndpoint.post("decideMergeProposal", "/identity/merge-proposals/:id/decide", {
      params: ProposalIdParams,
      payload: Decision,
      success: DecisionAnswer,
      error: [...common, InvalidState.wire, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Merge, dismiss (for good) or snooze a proposal; the same decision again answers it unchanged")
      .annotateMerge(write),
    HttpApiEndpoint.get("mergeHistory", "/identity/merge-history", {
      query: MergeHistoryQuery,
      success: MergeHistory,
      error: [...common, CustomerNotFound.wire]
    })
      .annotate(OpenApi.Summary, "Past merges into a customer (by customer_profile_id or customer_key), newest first, with their audit log ids")
      .annotateMerge(read),
    HttpApiEndpoint.get("mergePreview", "/identity/merge-preview", {
      query: MergePreviewQuery,
      success: MergePreviewAnswer,
      error: [...common, CustomerNotFound.wire, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "What merging any two customers would move")
      .annotateMerge(read),
    HttpApiEndpoint.post("undoMerge", "/identity/merges/:auditLogId/undo", {
      params: UndoParams,
      success: UndoAnswer,
      error: [...common, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Undo a merge: both customers, their identifiers, touches and conversions restored exactly; attribution and first payments recomputed")
      .annotateMerge(write)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Identity: merge review")
