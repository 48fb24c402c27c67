/**
 * Customers, journeys and erasure (`/api/v1/conversions/{id}/journey`, `/api/v1/customers/*`,
 * `/api/v1/visitors`; decision 0038).
 *
 * A journey row has two shapes. Without `customers:read` it is exactly the projected row of the
 * spec: the optional fields below are absent, not null. With it, the row also carries the page,
 * device, geo and browser-identity fields and `customer_profile_id`.
 */
import { Schema } from "effect"
import { Pagination } from "./common.ts"
import { CreditModel, CreditModels } from "./events.ts"
import { CursorParam, LimitParam, LiteralParam, NonBlankParam } from "./query.ts"

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

export const JourneyRowKinds = ["web_touch", "synthetic", "organic_interaction", "inherited", "proxy_click", "outcome"] as const
export const JourneyRowKind = Schema.Literals(JourneyRowKinds)

export const JoinMethods = ["ctwa_referral", "click_id", "link_token", "anonymous_id"] as const

const AdRef = Schema.Struct({ external_id: Schema.NullOr(Schema.String), name: Schema.NullOr(Schema.String) })

export const JourneyRow = Schema.Struct({
  touch_id: Schema.String,
  kind: JourneyRowKind,
  at: Schema.String,
  /** Null on `outcome` rows (an outcome arrives through no channel). */
  channel: Schema.NullOr(Schema.String),
  source: Schema.NullOr(Schema.String),
  medium: Schema.NullOr(Schema.String),
  campaign: Schema.NullOr(AdRef),
  ad_set: Schema.NullOr(AdRef),
  ad: Schema.NullOr(Schema.Struct({
    external_id: Schema.NullOr(Schema.String),
    name: Schema.NullOr(Schema.String),
    creative_thumbnail_url: Schema.NullOr(Schema.String)
  })),
  /** The kind of click id the touch carried; the value itself is never answered. */
  click_id_kind: Schema.NullOr(Schema.String),
  join_method: Schema.NullOr(Schema.Literals(JoinMethods)),
  is_credited: Schema.Boolean,
  credit_share: Schema.Number,
  credit_model: CreditModel,
  /** On the attribution path under `credit_model`, zero-weight positions included. */
  in_window: Schema.Boolean,
  // Full rows only (`customers:read`).
  customer_profile_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  path: Schema.optionalKey(Schema.NullOr(Schema.String)),
  referrer_domain: Schema.optionalKey(Schema.NullOr(Schema.String)),
  event_payload: Schema.optionalKey(Schema.NullOr(Schema.Unknown)),
  device: Schema.optionalKey(Schema.NullOr(Schema.String)),
  browser: Schema.optionalKey(Schema.NullOr(Schema.String)),
  os: Schema.optionalKey(Schema.NullOr(Schema.String)),
  country: Schema.optionalKey(Schema.NullOr(Schema.String)),
  city: Schema.optionalKey(Schema.NullOr(Schema.String)),
  session_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  anonymous_id: Schema.optionalKey(Schema.NullOr(Schema.String))
}).annotate({ identifier: "JourneyRow" })
export type JourneyRow = typeof JourneyRow.Type

/** `meta.conversion`: exactly seven fields without `customers:read`; `customer_profile_id` with it. */
export const JourneyConversion = Schema.Struct({
  outcome_event_id: Schema.String,
  conversion_key: Schema.String,
  occurred_at: Schema.String,
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  credit_model: CreditModel,
  customer_key: Schema.NullOr(Schema.String),
  customer_profile_id: Schema.optionalKey(Schema.NullOr(Schema.String))
}).annotate({ identifier: "JourneyConversion" })
export type JourneyConversion = typeof JourneyConversion.Type

export const ConversionJourney = Schema.Struct({
  data: Schema.Array(JourneyRow),
  meta: Schema.Struct({ conversion: JourneyConversion }),
  pagination: Pagination
}).annotate({ identifier: "ConversionJourney" })
export type ConversionJourney = typeof ConversionJourney.Type

export const PersonConversion = Schema.Struct({
  outcome_event_id: Schema.String,
  conversion_id: Schema.String,
  conversion_key: Schema.String,
  occurred_at: Schema.String,
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  is_first_payment: Schema.NullOr(Schema.Boolean)
}).annotate({ identifier: "PersonConversion" })
export type PersonConversion = typeof PersonConversion.Type

export const PersonIdentifier = Schema.Struct({ type: Schema.String, value: Schema.String })

/** `meta.person` of a person's journey; names and identifiers only with `customers:read`. */
export const JourneyPerson = Schema.Struct({
  customer_key: Schema.NullOr(Schema.String),
  conversion_count: Schema.Number,
  touch_count: Schema.Number,
  first_touch_at: Schema.NullOr(Schema.String),
  last_touch_at: Schema.NullOr(Schema.String),
  /** The newest 50. */
  conversions: Schema.Array(PersonConversion),
  customer_profile_id: Schema.optionalKey(Schema.String),
  first_name: Schema.optionalKey(Schema.NullOr(Schema.String)),
  last_name: Schema.optionalKey(Schema.NullOr(Schema.String)),
  identifiers: Schema.optionalKey(Schema.Array(PersonIdentifier))
}).annotate({ identifier: "JourneyPerson" })
export type JourneyPerson = typeof JourneyPerson.Type

export const PersonJourney = Schema.Struct({
  data: Schema.Array(JourneyRow),
  meta: Schema.Struct({ person: JourneyPerson }),
  pagination: Pagination
}).annotate({ identifier: "PersonJourney" })
export type PersonJourney = typeof PersonJourney.Type

/** `limit` of journey and people pages: at most 100 (the spec), default 50. */
export const MAX_JOURNEY_PAGE = 100
export const DEFAULT_JOURNEY_PAGE = 50

export const JourneyPageQuery = {
  cursor: Schema.optionalKey(CursorParam()),
  limit: Schema.optionalKey(LimitParam(MAX_JOURNEY_PAGE, DEFAULT_JOURNEY_PAGE)),
  model: Schema.optionalKey(
    LiteralParam(CreditModels, `Credit model of credit_share, is_credited and in_window: ${CreditModels.join(", ")} (default last_touch)`, "last_touch")
  )
}
export type JourneyPageQuery = Schema.Struct.Type<typeof JourneyPageQuery>

export const ConversionJourneyParams = {
  id: Schema.String.annotate({ description: "outcome_event_id, conversion_id, or the URL-encoded idempotency_key the event was sent with" })
}

/** Exactly one of the three selects the person; the service trims it. */
export const PersonJourneyQuery = {
  ...JourneyPageQuery,
  customer_key: Schema.optionalKey(NonBlankParam("The external_id the events were sent with")),
  email: Schema.optionalKey(NonBlankParam("Needs customers:read")),
  phone: Schema.optionalKey(NonBlankParam("Needs customers:read"))
}
export type PersonJourneyQuery = Schema.Struct.Type<typeof PersonJourneyQuery>

export const CustomerIdParams = { id: Schema.String.annotate({ description: "customer_profile_id" }) }

export const CustomerListItem = Schema.Struct({
  customer_profile_id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  identifiers: Schema.Array(PersonIdentifier),
  conversion_count: Schema.Number,
  touch_count: Schema.Number,
  first_touch_at: Schema.NullOr(Schema.String),
  last_touch_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "Customer" })
export type CustomerListItem = typeof CustomerListItem.Type

export const CustomerPage = Schema.Struct({ data: Schema.Array(CustomerListItem), pagination: Pagination })
  .annotate({ identifier: "CustomerPage" })

export const CustomersQuery = {
  cursor: Schema.optionalKey(CursorParam()),
  limit: Schema.optionalKey(LimitParam(MAX_JOURNEY_PAGE, DEFAULT_JOURNEY_PAGE))
}
export type CustomersQuery = Schema.Struct.Type<typeof CustomersQuery>

export const Visitor = Schema.Struct({
  anonymous_id: Schema.String,
  first_seen_at: Schema.String,
  last_seen_at: Schema.String,
  touch_count: Schema.Number,
  /** The customer the visitor's touches are bound to, if any. */
  customer_profile_id: Schema.NullOr(Schema.String),
  customer_key: Schema.NullOr(Schema.String),
  /** Of the newest touch. */
  channel: Schema.String,
  device: Schema.NullOr(Schema.String),
  browser: Schema.NullOr(Schema.String),
  os: Schema.NullOr(Schema.String),
  country: Schema.NullOr(Schema.String),
  last_url: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Visitor" })
export type Visitor = typeof Visitor.Type

export const VisitorPage = Schema.Struct({ data: Schema.Array(Visitor), pagination: Pagination })
  .annotate({ identifier: "VisitorPage" })

export const ErasureStatuses = ["completed"] as const

export const ErasureReceipt = Schema.Struct({
  erasure_id: Schema.String,
  request_ref: Schema.String,
  status: Schema.Literals(ErasureStatuses),
  /** The erased customer's `customer_key` (the sender's own id), null when it had none. */
  customer_key: Schema.NullOr(Schema.String),
  /** Why the sender asked, as sent; null when not given. */
  reason: Schema.NullOr(Schema.String),
  requested_at: Schema.String,
  completed_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ErasureReceipt" })
export type ErasureReceipt = typeof ErasureReceipt.Type

export const ErasureIdentifierTypes = ["email", "phone", "external_id", "crm_contact_id", "anonymous_id"] as const

export const CreateErasure = Schema.Struct({
  request_ref: Text(200),
  customer_key: Schema.optionalKey(Text(200)),
  email: Schema.optionalKey(Text(320)),
  phone: Schema.optionalKey(Text(64)),
  /** A pinned identifier of the customer. */
  identifier: Schema.optionalKey(Schema.Struct({ type: Schema.Literals(ErasureIdentifierTypes), value: Text(320) })),
  reason: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(500)))
}).annotate({ identifier: "CreateErasure" })
export type CreateErasure = typeof CreateErasure.Type

export const ErasureAnswer = Schema.Struct({ data: ErasureReceipt }).annotate({ identifier: "ErasureAnswer" })

export const ErasureIdParams = { erasure_id: Schema.String }
