import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CustomerNotFound,
  EntitlementRequired,
  IdempotencyKeyConflict,
  InvalidDateRange,
  InvalidParameter,
  InvalidState,
  profileErrors,
  ValidationError
} from "../../../../schema/errors.ts"
import {
  AssignPayer,
  CardgwPayment,
  CardgwRecorded,
  LinkageQuery,
  PaymentActionResult,
  PaymentIdParams,
  PaymentLinkagePage,
  PaymentPage,
  PaymentsQuery,
  RecordRefund,
  SetInstallment
} from "../../../../schema/payments.ts"
import { policy, PROFILE_PRINCIPALS } from "../../../http/policy.ts"


const read = policy({ scopes: ["conversions:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

/** Merchant actions and card-gateway payments: `events:write`, gated on the attribution add-on. */
const write = policy({
  scopes: ["events:write"],
  auth: PROFILE_PRINCIPALS,
  grain: "profile",
  idempotency: "none",
  entitlement: "svc_attribution"
})

const writeErrors = [...profileErrors, ValidationError.wire, EntitlementRequired.wire] as const

/** Payments with the merchant's actions applied, the actions, linkage, card-gateway payments. Decision 0032. */
export const PaymentsApi = HttpApiGroup.make("payments")
  .add(
    HttpApiEndpoint.get("listPayments", "/payments", {
      query: PaymentsQuery,
      success: PaymentPage,
      error: [...profileErrors, InvalidParameter.wire, InvalidDateRange.wire]
    })
      .annotate(
        OpenApi.Summary,
        "The profile's payments (conversions that count as cash) with installment, payer and manual refund applied; newest first"
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("paymentLinkage", "/payments/linkage", {
      query: LinkageQuery,
      success: PaymentLinkagePage,
      error: [...profileErrors, InvalidParameter.wire, InvalidDateRange.wire]
    })
      .annotate(OpenApi.Summary, "How each sale reached an ad: the credited touch of each payment under a model, or why none")
      .annotateMerge(read),
    HttpApiEndpoint.put("setPaymentInstallment", "/payments/:payment_id/installment", {
      params: PaymentIdParams,
      payload: SetInstallment,
      success: PaymentActionResult,
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Mark or unmark a payment as a later installment (never a first payment); idempotent")
      .annotateMerge(write),
    HttpApiEndpoint.put("assignPaymentPayer", "/payments/:payment_id/payer", {
      params: PaymentIdParams,
      payload: AssignPayer,
      success: PaymentActionResult,
      error: [...writeErrors, CustomerNotFound.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Assign who paid (an existing customer_key; null removes it): first payments and attribution follow the payer; idempotent"
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("recordPaymentRefund", "/payments/:payment_id/refund", {
      params: PaymentIdParams,
      payload: RecordRefund,
      success: PaymentActionResult,
      error: [...writeErrors, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Record a refund made outside any provider (default: the whole amount); a repeat of the same refund answers the same")
      .annotateMerge(write),
    HttpApiEndpoint.delete("undoPaymentRefund", "/payments/:payment_id/refund", {
      params: PaymentIdParams,
      success: PaymentActionResult,
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Undo the manual refund of a payment (404 when it has none)")
      .annotateMerge(write),
    HttpApiEndpoint.post("reportCardgwPayment", "/payments/cardgw", {
      payload: CardgwPayment,
      success: CardgwRecorded,
      error: [...writeErrors, InvalidParameter.wire, IdempotencyKeyConflict.wire, InvalidState.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Report a card-gateway payment directly (no connection); idempotent on gateway_payment_id (the same body answers the same)"
      )
      .annotateMerge(write)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Payments and the merchant's actions on them")
