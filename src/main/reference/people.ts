/** Journeys, customers, visitors, erasure, identity resolution and repair. */
import type { GroupDocs } from "./types.ts"

const proposalId = "The merge proposal's id."

export const peopleDocs: GroupDocs = {
  "customers.conversionJourney": {
    description: "The touches that led to one conversion, oldest first, each with its credit under `model`. Without `customers:read` the rows are projected (no person, page, device or browser-identity fields) and `meta.conversion` says which conversion it is. A conversion linked to nobody answers no rows.",
    parameters: { id: "The conversion: its `outcome_event_id`, its `conversion_id`, or the sender's own `idempotency_key` (URL-encoded)." }
  },
  "customers.personJourney": { description: "Every touch and outcome of one person, oldest first, across all their conversions; `meta.person` summarizes them (newest 50 conversions). Address the person by `customer_key`, or by `email` or `phone` with `customers:read`. 404 `customer_not_found` for an unknown or erased customer." },
  "customers.listCustomers": { description: "Customers (resolved people) with identifiers and counts, newest first. Personal data: needs `customers:read`, costs 3 units, and is written to the workspace's personal-data access log." },
  "customers.customerJourney": { description: "The full journey of one customer by `customer_profile_id`, with page, device and geo fields. Needs `customers:read`; costs 3 units.", parameters: { id: "The customer's `customer_profile_id`." } },
  "customers.listVisitors": { description: "Browsers seen by the tracker (anonymous ids) with their first and last visit, most recent first. Personal data: needs `visitors:read`; costs 3 units." },
  "customers.createErasure": {
    description: "Erases one customer, addressed by `customer_key`, `email`, `phone` or a pinned identifier. Personal data is deleted; conversions stay without a person; the key stops resolving and link tokens stop binding. The same `request_ref` answers the original receipt and erases nothing twice; the same ref for another customer is 400. API keys only (a session gets 403 `api_key_required`)."
  },
  "customers.getErasure": { description: "The receipt of an erasure: `status`, `customer_key`, `reason`, `requested_at`, `completed_at`." },
  "identity.scanMergeProposals": { description: "Re-runs the proposer now: every pair of live customers sharing an identifier gets a proposal; dismissed pairs stay dismissed. Answers counts." },
  "identity.listMergeProposals": { description: "The review queue, newest first. `status_counts` describes the whole queue whatever the filters. A cursor this queue did not issue is 400 `invalid_parameter` (reason `invalid_parameter:cursor`)." },
  "identity.previewMergeProposal": { description: "What merging the proposal's two customers would move (identifiers, touches, conversions); the older customer survives.", parameters: { id: proposalId } },
  "identity.decideMergeProposal": { description: "`merge` (the older customer survives; attribution and first payments are recomputed), `dismiss` (for good) or `snooze` (until `snooze_until`). The same decision again answers the proposal unchanged.", parameters: { id: proposalId } },
  "identity.mergeHistory": { description: "Merges into a customer, newest first, each with the audit log id that undoes it." },
  "identity.mergePreview": { description: "What merging any two customers `a` and `b` would move, without a proposal." },
  "identity.undoMerge": { description: "Undoes a merge: both customers, their identifiers, touches and conversions come back exactly; attribution and first payments are recomputed. 409 when a later merge depends on it." },
  "identityRepair.scanLinks": { description: "Recomputes inferred visitor-to-customer links from the current evidence; links already decided keep their decision." },
  "identityRepair.listLinks": { description: "Inferred links to review, newest first: an anonymous visitor, the customer it likely is, and the evidence. `status_counts` describes the whole queue." }
}
