/** Definitions, attribution replays, events, payments, partner data, link tokens. */
import { ids } from "./synthesize.ts"
import type { GroupDocs } from "./types.ts"

const paymentId = "The payment's id (`payment_id` of `GET /api/v1/payments`)."

export const eventsDocs: GroupDocs = {
  "definitions.listGoalDefinitions": { description: "The profile's goal (conversion) definitions: the event names each counts, whether it is cash and attribution-eligible, its lookback window and which one is the default." },
  "definitions.upsertGoalDefinition": { description: "Creates (201) or updates (200) the definition named by `conversion_key`. `is_default: true` moves the default here. A change to what counts (event names, cash, eligibility) queues a full attribution replay (`meta.replay_job_id`)." },
  "definitions.patchGoalDefinition": { description: "Changes only the fields given; a classification change queues a replay.", parameters: { id: "The goal definition's id." } },
  "definitions.createGoal": { description: "**Deprecated** (`Deprecation` and `Sunset` headers; sunset 2026-12-04): creates or updates a goal from `{name, event_name}`. Use `POST /api/v1/goals/definitions`." },
  "definitions.getOutcomeDefinitions": { description: "Every definition of the profile, and the outcome keys (`outcomes[].key`) a `pipeline_stage` definition's `event_key` may name." },
  "definitions.putOutcomeDefinitions": { description: "Replaces the profile's definitions with the list sent (unlisted ones are removed). A stage `event_key` that is not one of `outcomes[].key` is 422 `validation_error`; nothing is written then." },
  "definitions.patchOutcomeDefinition": { description: "Sets a pipeline-stage definition's `event_key` (one of `outcomes[].key`, else 422). The same value again changes nothing.", parameters: { id: "The outcome definition's id." } },
  "attribution.recompute": { description: "Queues a full attribution replay of the profile (credit under every model is rebuilt); joins a replay already queued. 202 with the job; follow it at `GET /api/v1/tracking/replay-status`." },
  "attribution.replayStatus": { description: "The most recent replay: `state` (`queued`, `running`, `completed`, `failed`), `progress` of `total`; `data: null` when the profile never had one." },
  "events.ingestEvent": {
    request: {
      event_name: "purchase",
      idempotency_key: "order-2026-000187",
      occurred_at: "2026-11-02T10:15:00Z",
      properties: { value: "120.00", currency: "EUR" },
      user_traits: { external_id: "crm-10442", email: "ana.lopez@example.com", phone: "+34600123456" },
      action_source: "physical_store"
    },
    response: { data: { outcome_event_id: ids.outcomeEvent, conversion_id: ids.conversion } }
  },
  "events.retractEvent": {
    description: "Deletes the event sent with this `idempotency_key`, its conversions and their credit; first-payment flags of the customer's other payments are recomputed and a replay queued. Again: `status: already_retracted` with zero counts. 409 `event_already_exported` or `event_linked_to_conversation` when it cannot go; 404 `event_not_found` for an unknown key.",
    request: { idempotency_key: "order-2026-000187", reason: "order cancelled before shipping" }
  },
  "events.listConversions": { description: "Conversions of the profile, newest first, with `outcome_event_id`, `conversion_key`, value, `customer_key`, `is_first_payment` and the credit of `model`. Keyset pages." },
  "payments.listPayments": { description: "Conversions that count as cash, newest first, with the merchant's corrections applied: installment marks, payer assignments, manual refunds." },
  "payments.paymentLinkage": { description: "For each payment, the touch `model` credits and how it reached an ad (`join_method`), or why none did." },
  "payments.setPaymentInstallment": { description: "Marks (or unmarks) a payment as a later installment: never a first payment. First-payment flags of the customer are recomputed. Idempotent.", parameters: { payment_id: paymentId } },
  "payments.assignPaymentPayer": { description: "Assigns the payment to another customer (`payer_customer_key`, an existing `customer_key`; `null` removes the assignment). First payments and attribution follow the payer. Idempotent.", parameters: { payment_id: paymentId } },
  "payments.recordPaymentRefund": { description: "Records a refund made outside any provider (default: the whole amount). Refunded payments leave revenue and credit. The same refund again answers the same.", parameters: { payment_id: paymentId } },
  "payments.undoPaymentRefund": { description: "Removes the manual refund: the payment counts again. 404 when it has none.", parameters: { payment_id: paymentId } },
  "payments.reportCardgwPayment": { description: "Reports a card-gateway payment without a provider connection; it becomes a payment conversion like one from a connection. Idempotent on `gateway_payment_id`." },
  "partnerData.previewAdReferrals": { description: "Read-only: for a batch of up to 500 referrals, how many existing conversions each credit model would re-credit. Nothing is written." }
}
