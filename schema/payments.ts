/**
 * Payments (`/api/v1/payments/*`, decision 0032). A payment is a conversion whose definition
 * counts as cash; its `payment_id` is the conversion's id (`conversion_id` elsewhere). The
 * merchant's actions on it (installment mark, payer assignment, manual refund) show on each row.
 *
 * Money is never a binary float: amounts arrive as a JSON number (its literal text is kept) or
 * a decimal string, and are answered as exact decimal strings.
 */
import { Schema } from "effect"
import { CurrencyCode, Page } from "./common.ts"
import { CreditModel, CreditModels, isIsoDateTime, MoneyValue, UserTraits } from "./events.ts"
import { CursorParam, DateOrDateTimeParam, LimitParam, LiteralParam, NonEmptyParam } from "./query.ts"

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

const IsoDateTime = Schema.String.check(
  Schema.makeFilter((value: string) =>
    isIsoDateTime(value) ? undefined : "Expected an ISO 8601 date-time with an offset, such as 2026-11-21T14:20:00Z"
  )
)

export const PaymentStatuses = ["paid", "refunded"] as const
export const PaymentStatus = Schema.Literals(PaymentStatuses)
export type PaymentStatus = typeof PaymentStatus.Type

/** A refund the merchant recorded outside any provider. */
export const ManualRefund = Schema.Struct({
  /** Exact decimal string in the payment's currency; null when the payment carried no amount (refunded whole). */
  amount: Schema.NullOr(Schema.String),
  /** When it was recorded (ISO 8601 UTC, microseconds). */
  at: Schema.String,
  manual: Schema.Literal(true)
})
export type ManualRefund = typeof ManualRefund.Type

export const Payment = Schema.Struct({
  /** The conversion's id. */
  payment_id: Schema.String,
  outcome_event_id: Schema.String,
  occurred_at: Schema.String,
  /** Exact decimal string, or null when the event carried no value. */
  amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  /** The customer the payment was recorded for (the `external_id` sent), null when none. */
  customer_key: Schema.NullOr(Schema.String),
  /** Null only while a definition that just became cash has not been recomputed. */
  is_first_payment: Schema.NullOr(Schema.Boolean),
  /** Marked by the merchant as a later installment: never a first payment. */
  installment: Schema.Boolean,
  /** The customer the merchant said paid; null when none was assigned. */
  payer_customer_key: Schema.NullOr(Schema.String),
  refunded: Schema.NullOr(ManualRefund),
  /** `refunded` while a manual refund (whole or part) is recorded, else `paid`. */
  status: PaymentStatus
}).annotate({ identifier: "Payment" })
export type Payment = typeof Payment.Type

export const PaymentPage = Page(Payment).annotate({ identifier: "PaymentPage" })

/** `limit` of the payment lists: 1 to 200, default 50. */
export const MAX_PAYMENTS_PAGE = 200

export const PaymentsQuery = {
  limit: Schema.optionalKey(LimitParam(MAX_PAYMENTS_PAGE, 50)),
  cursor: Schema.optionalKey(CursorParam()),
  customer_key: Schema.optionalKey(NonEmptyParam("Only payments recorded for this customer or assigned to them as payer")),
  start: Schema.optionalKey(DateOrDateTimeParam("ISO date (from its UTC midnight) or date-time with an offset (inclusive)")),
  end: Schema.optionalKey(DateOrDateTimeParam("ISO date (through that UTC day) or date-time with an offset (inclusive)")),
  status: Schema.optionalKey(LiteralParam(PaymentStatuses, `One of ${PaymentStatuses.join(", ")}`))
}
export type PaymentsQuery = Schema.Struct.Type<typeof PaymentsQuery>

export const PaymentIdParams = { payment_id: Schema.String }

/** The answer of every merchant action: the payment as it is now, and whether the call changed it. */
export const PaymentActionResult = Schema.Struct({
  data: Payment,
  meta: Schema.Struct({ changed: Schema.Boolean })
}).annotate({ identifier: "PaymentActionResult" })
export type PaymentActionResult = typeof PaymentActionResult.Type

export const SetInstallment = Schema.Struct({ installment: Schema.Boolean }).annotate({ identifier: "SetInstallment" })

export const AssignPayer = Schema.Struct({
  /** An existing customer of the profile (its `customer_key`); null removes the assignment. */
  customer_key: Schema.NullOr(Text(255))
}).annotate({ identifier: "AssignPayer" })

export const RecordRefund = Schema.Struct({
  /** Default: the whole amount paid. More than 0 and at most the amount paid. */
  amount: Schema.optionalKey(MoneyValue),
  /** The merchant's note; stored in the payment's history, never answered. */
  reason: Schema.optionalKey(Text(500))
}).annotate({ identifier: "RecordRefund" })
export type RecordRefund = typeof RecordRefund.Type

export const LinkageReasons = ["not_credited_yet", "no_customer", "not_attribution_eligible", "no_touch_in_window"] as const
export const LinkageReason = Schema.Literals(LinkageReasons)
export type LinkageReason = typeof LinkageReason.Type

export const LinkageQuery = {
  limit: Schema.optionalKey(LimitParam(MAX_PAYMENTS_PAGE, 50)),
  cursor: Schema.optionalKey(CursorParam()),
  customer_key: Schema.optionalKey(NonEmptyParam("Only payments recorded for this customer or assigned to them as payer")),
  start: Schema.optionalKey(DateOrDateTimeParam("ISO date (from its UTC midnight) or date-time with an offset (inclusive)")),
  end: Schema.optionalKey(DateOrDateTimeParam("ISO date (through that UTC day) or date-time with an offset (inclusive)")),
  model: Schema.optionalKey(LiteralParam(CreditModels, `Credit model: ${CreditModels.join(", ")} (default last_touch)`, "last_touch"))
}
export type LinkageQuery = Schema.Struct.Type<typeof LinkageQuery>

/** A campaign, ad set or ad a touch carried: the ad platform's own id and the name seen. */
export const AdEntity = Schema.Struct({
  external_id: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String)
})

export const JoinMethod = Schema.Literals(["ctwa_referral", "click_id", "link_token", "anonymous_id"])

/** The credited touch: how the sale reached the business. Never a click id value, never person data. */
export const LinkedTouch = Schema.Struct({
  touch_id: Schema.String,
  kind: Schema.String,
  at: Schema.String,
  channel: Schema.String,
  source: Schema.NullOr(Schema.String),
  medium: Schema.NullOr(Schema.String),
  /** Null when the touch carried no campaign (likewise ad set and ad). */
  campaign: Schema.NullOr(AdEntity),
  ad_set: Schema.NullOr(AdEntity),
  ad: Schema.NullOr(AdEntity),
  join_method: Schema.NullOr(JoinMethod),
  /** The kind of click id (`gclid`, `fbclid`, ...); the value never appears. */
  click_id_kind: Schema.NullOr(Schema.String),
  /** Its share under the model (10 decimals). */
  credit_share: Schema.String
})

export const PaymentLinkage = Schema.Struct({
  payment_id: Schema.String,
  outcome_event_id: Schema.String,
  occurred_at: Schema.String,
  amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  customer_key: Schema.NullOr(Schema.String),
  status: PaymentStatus,
  credit_model: CreditModel,
  linked: Schema.Boolean,
  /** Why there is no credited touch; null when linked. */
  reason: Schema.NullOr(LinkageReason),
  /** The touch with the largest share under the model (ties: the later one); null when not linked. */
  touch: Schema.NullOr(LinkedTouch),
  /** How many touches the model credits (1 for single-touch models). */
  credited_touches: Schema.Int
}).annotate({ identifier: "PaymentLinkage" })
export type PaymentLinkage = typeof PaymentLinkage.Type

export const PaymentLinkagePage = Page(PaymentLinkage).annotate({ identifier: "PaymentLinkagePage" })

export const CardgwPayment = Schema.Struct({
  /** The gateway's own id of the charge: the idempotency key (per profile). At most 200 characters. */
  gateway_payment_id: Text(200),
  /** More than 0: a JSON number (its literal text is kept exactly) or a decimal string. */
  amount: MoneyValue,
  currency: CurrencyCode,
  /** Default: now. */
  occurred_at: Schema.optionalKey(IsoDateTime),
  /** Who paid: the sender's own customer id (`customer_key`), email, phone. */
  customer: UserTraits,
  /** As `properties.subject_ref` of an event: an opaque id of who the payment is for, never personal data. */
  subject_ref: Schema.optionalKey(Schema.String),
  /** Part of what makes a repeat "the same request"; not stored (it may carry personal data). */
  description: Schema.optionalKey(Text(500))
}).annotate({ identifier: "CardgwPayment" })
export type CardgwPayment = typeof CardgwPayment.Type

export const CardgwRecorded = Schema.Struct({
  data: Schema.Struct({
    outcome_event_id: Schema.String,
    /** The conversion the payment became (null when no definition makes `payment` a conversion). */
    payment_id: Schema.NullOr(Schema.String)
  })
}).annotate({ identifier: "CardgwRecorded" })
export type CardgwRecorded = typeof CardgwRecorded.Type
