/**
 * Server-side events, retractions and the conversions list (`/api/v1/events`,
 * `/api/v1/events/retractions`, `/api/v1/conversions`). Decision 0029.
 *
 * Money is never a binary float: `properties.value` is a JSON number or a decimal string on
 * the way in, kept as its literal text (the handler re-reads a number's source text from the
 * raw body), stored as `numeric(20,6)` and answered as a decimal string.
 */
import { Schema } from "effect"
import { CurrencyCode, openObject, Page } from "./common.ts"
import { isCalendarDate, isIsoDateTime } from "./dates.ts"
import { CursorParam, DateOrDateTimeParam, LimitParam, LiteralParam, NonEmptyParam } from "./query.ts"

/** `action_source`: the nine values of the specification. */
export const ActionSources = [
  "website",
  "business_messaging",
  "physical_store",
  "system_generated",
  "app",
  "phone_call",
  "chat",
  "email",
  "other"
] as const
export const ActionSource = Schema.Literals(ActionSources)

/** The six credit models (`?model=` of the conversions list). */
export const CreditModels = ["last_touch", "first_touch", "last_non_direct", "linear", "time_decay", "svc_model"] as const
export const CreditModel = Schema.Literals(CreditModels)
export type CreditModel = typeof CreditModel.Type

export { isCalendarDate, isIsoDateTime }

const IsoDateTime = Schema.String.check(
  Schema.makeFilter((value: string) =>
    isIsoDateTime(value) ? undefined : "Expected an ISO 8601 date-time with an offset, such as 2026-11-21T14:20:00Z"
  )
)

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

/**
 * `properties.value`: a JSON number or a decimal string. Either way the service reads the
 * literal text, never the float: at most 14 integer digits and 6 decimals.
 */
export const MoneyValue = Schema.Union([Schema.Finite, Schema.String]).annotate({
  description: "An amount: a JSON number (its literal text is kept exactly) or a decimal string such as \"19.99\""
})

export const EventProperties = Schema.Struct({
  value: Schema.optionalKey(MoneyValue),
  /** ISO-4217; defaults to the profile's currency when a value is sent without one. */
  currency: Schema.optionalKey(CurrencyCode),
  /**
   * Opaque id of who a payment is for: a canonical UUID or a token of at most 32 letters,
   * digits, `_` and `-`. Checked by the service (personal data answers 400 `invalid_parameter`).
   * Never returned by any API.
   */
  subject_ref: Schema.optionalKey(Schema.String),
  /**
   * Designed (decision 0029): the sender's id for one purchase split into several orders or
   * charges; a payment sharing the first payment's `order_group` belongs to the first purchase.
   */
  order_group: Schema.optionalKey(Text(64))
})

export const UserTraits = Schema.Struct({
  /** The sender's own customer id, later the `customer_key`. */
  external_id: Schema.optionalKey(Text(255)),
  /** Stored lower-cased and trimmed; never returned by these routes. */
  email: Schema.optionalKey(
    Text(320).check(Schema.isPattern(/^\s*[^\s@]+@[^\s@]+\s*$/, { message: "Expected an email address" }))
  ),
  /** With its country code; stored in E.164 (decision 0040); never returned by these routes. */
  phone: Schema.optionalKey(
    Text(40).check(Schema.isPattern(/^\s*\+?[0-9][0-9 ().-]*\s*$/, { message: "Expected a phone number" }))
  ),
  /** The sender's CRM contact id: an identifier of the person, matched as sent (trimmed). */
  crm_contact_id: Schema.optionalKey(Text(255)),
  /** A national id: only its keyed hash is stored and matched; never returned, never sent anywhere. */
  national_id: Schema.optionalKey(Text(64)),
  /** The web tracker's anonymous id of the person's browser: its touches join the person (`join_method: anonymous_id`). */
  anonymous_id: Schema.optionalKey(
    Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_-]{8,64}$/, { message: "Expected the tracker's anonymous id (8 to 64 letters, digits, - or _)" }))
  )
})

export const IngestEvent = Schema.Struct({
  event_name: Text(200),
  /** Default: a fresh UUID (a retry without it is a second event). At most 255 characters. */
  idempotency_key: Schema.optionalKey(Text(255)),
  /** Default: now. */
  occurred_at: Schema.optionalKey(IsoDateTime),
  // Open (decision 0029): other keys of these two are accepted and ignored, never stored.
  properties: Schema.optionalKey(openObject(EventProperties)),
  user_traits: Schema.optionalKey(openObject(UserTraits)),
  action_source: Schema.optionalKey(ActionSource),
  click_ids: Schema.optionalKey(Schema.Record(Schema.String, Schema.String.check(Schema.isMaxLength(2048))))
}).annotate({ identifier: "IngestEvent" })
export type IngestEvent = typeof IngestEvent.Type

/** `no_conversion_definition`: the event was recorded, but no definition lists its name. */
export const IngestWarningCodes = ["no_conversion_definition"] as const

/** Something the caller probably did not mean, on an answer that still succeeded. */
export const IngestWarning = Schema.Struct({
  code: Schema.Literals(IngestWarningCodes),
  message: Schema.String
}).annotate({ identifier: "IngestWarning" })

export const IngestedEvent = Schema.Struct({
  data: Schema.Struct({
    outcome_event_id: Schema.String,
    /** Null when no conversion definition of the profile lists the event's name. */
    conversion_id: Schema.NullOr(Schema.String)
  }),
  /** Present only when there is a warning (`conversion_id` null: `no_conversion_definition`). */
  meta: Schema.optionalKey(Schema.Struct({ warnings: Schema.Array(IngestWarning) }))
}).annotate({ identifier: "IngestedEvent" })
export type IngestedEvent = typeof IngestedEvent.Type

export const RetractEvent = Schema.Struct({
  idempotency_key: Text(255),
  reason: Text(500)
}).annotate({ identifier: "RetractEvent" })
export type RetractEvent = typeof RetractEvent.Type

export const RetractionCounts = Schema.Struct({
  /** Outcome events retracted (1, or 0 when already retracted). */
  events: Schema.Int,
  conversions: Schema.Int,
  /** Attribution credit rows deleted with the conversions. */
  credits: Schema.Int,
  /** The customer's other payments whose `is_first_payment` changed. */
  first_payment_flags: Schema.Int
})

export const Retraction = Schema.Struct({
  data: Schema.Struct({
    status: Schema.Literals(["retracted", "already_retracted"]),
    counts: RetractionCounts
  })
}).annotate({ identifier: "Retraction" })
export type Retraction = typeof Retraction.Type

/** `limit` of the conversions list: 1 to 200, default 50. */
export const MAX_CONVERSIONS_PAGE = 200

export const ConversionsQuery = {
  limit: Schema.optionalKey(LimitParam(MAX_CONVERSIONS_PAGE, 50)),
  cursor: Schema.optionalKey(CursorParam()),
  customer_key: Schema.optionalKey(NonEmptyParam("Only this customer's conversions (the external_id sent at ingest)")),
  conversion_key: Schema.optionalKey(NonEmptyParam("Only this definition's conversions")),
  start: Schema.optionalKey(DateOrDateTimeParam("ISO date (from its UTC midnight) or date-time with an offset (inclusive)")),
  end: Schema.optionalKey(DateOrDateTimeParam("ISO date (through that UTC day) or date-time with an offset (inclusive)")),
  model: Schema.optionalKey(
    LiteralParam(CreditModels, `Credit model shown as credit_model: ${CreditModels.join(", ")} (default last_touch)`, "last_touch")
  )
}
export type ConversionsQuery = Schema.Struct.Type<typeof ConversionsQuery>

export const Conversion = Schema.Struct({
  outcome_event_id: Schema.String,
  conversion_id: Schema.String,
  conversion_key: Schema.String,
  occurred_at: Schema.String,
  /** Exact decimal string, or null when the event carried no value. */
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  credit_model: CreditModel,
  customer_key: Schema.NullOr(Schema.String),
  /** Null when the conversion is not a payment (its definition does not count as cash). */
  is_first_payment: Schema.NullOr(Schema.Boolean)
}).annotate({ identifier: "Conversion" })
export type Conversion = typeof Conversion.Type

export const ConversionPage = Page(Conversion).annotate({ identifier: "ConversionPage" })

/** The person behind a replayed outcome, only for callers holding `customers:read` (decision 0044). */
export const OutcomeContact = Schema.Struct({
  customer_key: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String)
}).annotate({ identifier: "OutcomeContact" })

/** An `outcome.recorded` event as webhooks deliver it and `GET /api/v1/outcomes/recorded` replays it. */
export const OutcomeRecordedEvent = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("outcome.recorded"),
  created_at: Schema.String,
  data: Schema.Struct({
    provider: Schema.String,
    outcome_type: Schema.String,
    occurred_at: Schema.String,
    customer_key: Schema.NullOr(Schema.String),
    value: Schema.NullOr(Schema.String),
    currency: Schema.NullOr(Schema.String),
    outcome_event_id: Schema.String,
    conversion_id: Schema.NullOr(Schema.String),
    contact: Schema.optionalKey(Schema.NullOr(OutcomeContact))
  })
}).annotate({ identifier: "OutcomeRecordedEvent" })
export type OutcomeRecordedEvent = typeof OutcomeRecordedEvent.Type

export const OutcomeReplayPage = Schema.Struct({
  data: Schema.Array(OutcomeRecordedEvent),
  /** `cursor` is always where to continue from, also when nothing more is there yet (poll it later). */
  pagination: Schema.Struct({ has_next: Schema.Boolean, cursor: Schema.NullOr(Schema.String) })
}).annotate({ identifier: "OutcomeReplayPage" })

/** `limit` of the outcome replay: 1 to 200, default 100. */
/** The replay answers the events of the last 90 days (spec); the outbox keeps no longer (decision 0141). */
export const REPLAY_WINDOW_DAYS = 90
export const MAX_REPLAY_PAGE = 200
export const DEFAULT_REPLAY_PAGE = 100

export const OutcomeReplayQuery = {
  cursor: Schema.optionalKey(CursorParam("pagination.cursor of the previous page; absent: the start of the 90-day window")),
  limit: Schema.optionalKey(LimitParam(MAX_REPLAY_PAGE, DEFAULT_REPLAY_PAGE))
}
export type OutcomeReplayQuery = Schema.Struct.Type<typeof OutcomeReplayQuery>
