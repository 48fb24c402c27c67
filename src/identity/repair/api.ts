/**
 * Identity repair and inferred identity links over HTTP (decision 0039). Answers that carry
 * identifier values or visitor ids (the repair scan, the link list and a decision) need
 * `customers:read` and are written to the PII access log; the writes that answer ids and counts
 * only (repair, link scan) need `attribution:write`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { InvalidParameter, InvalidState, profileErrors, ValidationError } from "../../../schema/errors.ts"
import {
  LinkDecision,
  LinkDecisionAnswer,
  LinkIdParams,
  LinkPage,
  LinkScanAnswer,
  LinksQuery,
  RepairAnswer,
  RepairRequest,
  RepairScanPage,
  RepairScanQuery
} from "../../../schema/identity-repair.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"


const write = policy({ scopes: ["attribution:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

export const IdentityRepairApi = HttpApiGroup.make("identityRepair")
  .add(
    HttpApiEndpoint.get("repairScan", "/identity/repair-scan", {
      query: RepairScanQuery,
      success: RepairScanPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Audit of the live customers: missing primary email or phone (what a backfill would write) and duplicate email or phone groups (merge review); offset pages, counts in summary (heavy: 3 units)"
      )
      .annotate(
        OpenApi.Description,
        "Rows come in a fixed order: missing primary email, missing primary phone (oldest customer first), duplicate " +
          "email groups, duplicate phone groups (by value). summary counts the whole scan: auto_repairable_count counts " +
          "backfills only; auto_merge_count (duplicate groups) is informational and never acted on by repair. Rows carry " +
          "identifier values: customers:read, PII-logged, refused on healthcare-family profiles."
      )
      .annotateMerge(policy({
        scopes: ["customers:read"],
        auth: PROFILE_PRINCIPALS,
        grain: "profile",
        idempotency: "none",
        cost: 3,
        personData: true
      })),
    HttpApiEndpoint.post("repair", "/identity/repair", {
      payload: RepairRequest,
      success: RepairAnswer,
      error: [...profileErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Preview or apply the primary-flag backfills; never merges and never touches duplicate groups")
      .annotate(
        OpenApi.Description,
        "mode preview answers what an apply would write and writes nothing. mode apply marks, for each live customer " +
          "holding emails (or phones) of which none is primary, the oldest one primary, in one transaction with an audit " +
          "event. A repeat writes nothing and answers changed: false. Ids and counts only, never identifier values."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("scanLinks", "/identity/links/scan", {
      success: LinkScanAnswer,
      error: profileErrors
    })
      .annotate(OpenApi.Summary, "Recompute the inferred identity links from the current evidence (decided links are kept as decided)")
      .annotateMerge(write),
    HttpApiEndpoint.get("listLinks", "/identity/links", {
      query: LinksQuery,
      success: LinkPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Inferred-link review list, newest first: an anonymous visitor, the customer it likely is, and the evidence; status_counts describe the whole queue"
      )
      .annotateMerge(policy({ scopes: ["customers:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none", personData: true })),
    HttpApiEndpoint.post("decideLink", "/identity/links/:id/decide", {
      params: LinkIdParams,
      payload: LinkDecision,
      success: LinkDecisionAnswer,
      error: [...profileErrors, ValidationError.wire, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Accept (bind the visitor's touches to the customer and re-credit) or reject (never proposed again) a link")
      .annotate(
        OpenApi.Description,
        "The same decision again answers the link unchanged (meta.changed: false); the other decision on a decided link " +
          "is 409 invalid_state."
      )
      .annotateMerge(policy({
        scopes: ["attribution:write", "customers:read"],
        auth: PROFILE_PRINCIPALS,
        grain: "profile",
        idempotency: "none",
        personData: true
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Identity repair and inferred identity links")
