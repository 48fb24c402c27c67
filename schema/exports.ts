/**
 * Conversion sync (issue 20 parts 1-3): the catalog's privacy settings, export destinations and
 * rules, the test event and the delivery ledger (decisions 0073-0075).
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Backlog, Page, PageQuery } from "./common.ts"
import { PrivacyMode } from "./tenancy.ts"

export const PlatformSafeTarget = Schema.Literals(["existing", "clean"])

/**
 * `privacy_config` of the `custom` mode (the other modes ignore it but keep what was sent):
 * how URLs are cut, which `custom_data` keys go out, whether event names are neutralised.
 */
export const PrivacyConfig = Schema.Struct({
  url_mode: Schema.optionalKey(Schema.Literals(["full", "origin", "none"])),
  custom_data_allowlist: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMaxLength(64))).check(Schema.isMaxLength(50))),
  neutral_event_names: Schema.optionalKey(Schema.Boolean)
})
export type PrivacyConfig = typeof PrivacyConfig.Type

/** Customer-list audiences of a Platform-Safe profile: off until the merchant enables them (decision 0100). */
export const PlatformSafeAudiences = Schema.Literals(["enabled", "disabled"])
export type PlatformSafeAudiences = typeof PlatformSafeAudiences.Type

export const CatalogSettings = Schema.Struct({
  privacy_mode: PrivacyMode,
  privacy_config: Schema.NullOr(PrivacyConfig),
  platform_safe_target: PlatformSafeTarget,
  platform_safe_audiences: PlatformSafeAudiences
})

export const Catalog = Schema.Struct({
  data: Schema.Struct({
    profile_id: Schema.String,
    settings: CatalogSettings,
    /** Delegated keys revoked by this PUT (moving to a healthcare-family mode); 0 on a read. */
    revoked_keys: Schema.Int
  })
})

export const PutCatalog = Schema.Struct({
  privacy_mode: PrivacyMode,
  privacy_config: Schema.optionalKey(Schema.NullOr(PrivacyConfig)),
  platform_safe_target: Schema.optionalKey(PlatformSafeTarget),
  /** Absent keeps the stored value (default `disabled`). */
  platform_safe_audiences: Schema.optionalKey(PlatformSafeAudiences)
})
export type PutCatalog = typeof PutCatalog.Type

export const DestinationKind = Schema.Literals(["adplatform_capi", "adplatform_capi_messaging"])
export type DestinationKind = typeof DestinationKind.Type

const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))
const DatasetId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200), Schema.isPattern(/^[A-Za-z0-9_.:-]+$/))

export const Destination = Schema.Struct({
  id: Schema.String,
  kind: DestinationKind,
  connection_id: Schema.String,
  dataset_id: Schema.String,
  name: Schema.String,
  clean_dataset: Schema.Boolean,
  status: Schema.Literals(["active", "disabled"]),
  /** The profile's Platform-Safe target, shown on every destination (routes.tsv). */
  platform_safe_target: PlatformSafeTarget,
  created_at: Schema.String,
  updated_at: Schema.String,
  /** Its exports waiting (pending or held), the oldest's age and the last minute's deliveries (decision 0120). */
  backlog: Backlog
})
export type Destination = typeof Destination.Type

export const DestinationEnvelope = Schema.Struct({ data: Destination })
export const DestinationCreated = Schema.Struct({ data: Destination }).pipe(HttpApiSchema.status(201))
export const DestinationPage = Page(Destination)
export const DestinationsQuery = PageQuery
export type DestinationsQuery = Schema.Struct.Type<typeof DestinationsQuery>

export const CreateDestination = Schema.Struct({
  kind: DestinationKind,
  connection_id: Schema.String.check(Schema.isUUID()),
  dataset_id: DatasetId,
  name: Name,
  clean_dataset: Schema.optionalKey(Schema.Boolean)
})
export type CreateDestination = typeof CreateDestination.Type

export const UpdateDestination = Schema.Struct({
  dataset_id: Schema.optionalKey(DatasetId),
  name: Schema.optionalKey(Name),
  status: Schema.optionalKey(Schema.Literals(["active", "disabled"])),
  clean_dataset: Schema.optionalKey(Schema.Boolean)
})
export type UpdateDestination = typeof UpdateDestination.Type

export const DestinationIdParams = { id: Schema.String.annotate({ description: "The destination's id" }) }

export const Deleted = Schema.Struct({ data: Schema.Struct({ id: Schema.String, deleted: Schema.Boolean }) })

/** The ad platform's messaging event names (`adplatform_capi_messaging`). */
export const MESSAGING_EVENT_NAMES = ["LeadSubmitted", "QualifiedLead", "Purchase", "OrderCreated", "OrderShipped", "ViewContent", "AddToCart", "InitiateCheckout"] as const

const EventName = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))

/**
 * The platform's event name per destination kind; the messaging name is checked by the service
 * (422 for a name the platform does not know). Other keys are refused like any unknown key (400).
 */
export const EventNameOverrides = Schema.Struct({
  adplatform_capi: Schema.optionalKey(Schema.NullOr(Schema.String)),
  adplatform_capi_messaging: Schema.optionalKey(Schema.NullOr(Schema.String))
})

export const Rule = Schema.Struct({
  id: Schema.String,
  conversion_key: Schema.String,
  destination_ids: Schema.NullOr(Schema.Array(Schema.String)),
  platform_event_name_overrides: EventNameOverrides,
  enabled: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type Rule = typeof Rule.Type

export const RuleEnvelope = Schema.Struct({ data: Rule })
export const RuleCreated = Schema.Struct({ data: Rule }).pipe(HttpApiSchema.status(201))
export const RulePage = Page(Rule)
export const RulesQuery = PageQuery
export type RulesQuery = Schema.Struct.Type<typeof RulesQuery>

export const CreateRule = Schema.Struct({
  conversion_key: EventName,
  destination_ids: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String.check(Schema.isUUID())).check(Schema.isMaxLength(50)))),
  platform_event_name_overrides: Schema.optionalKey(EventNameOverrides),
  enabled: Schema.optionalKey(Schema.Boolean)
})
export type CreateRule = typeof CreateRule.Type

export const UpdateRule = Schema.Struct({
  destination_ids: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String.check(Schema.isUUID())).check(Schema.isMaxLength(50)))),
  platform_event_name_overrides: Schema.optionalKey(EventNameOverrides),
  enabled: Schema.optionalKey(Schema.Boolean)
})
export type UpdateRule = typeof UpdateRule.Type

export const RuleIdParams = { id: Schema.String.annotate({ description: "The rule's id" }) }

export const TestEvent = Schema.Struct({
  event_name: Schema.optionalKey(EventName)
})

export const TestEventResult = Schema.Struct({
  data: Schema.Struct({
    destination_id: Schema.String,
    event_id: Schema.String,
    event_name: Schema.String,
    test: Schema.Literal(true),
    /** The platform's reply to the test event. */
    platform_reply: Schema.Struct({ events_received: Schema.Int })
  })
})

export const Delivery = Schema.Struct({
  id: Schema.String,
  destination_id: Schema.NullOr(Schema.String),
  outcome_event_id: Schema.NullOr(Schema.String),
  event_id: Schema.NullOr(Schema.String),
  attempt: Schema.Int,
  decision: Schema.Literals(["delivered", "retrying", "failed", "held", "skipped", "suppressed"]),
  action_source: Schema.NullOr(Schema.String),
  skip_reason: Schema.NullOr(Schema.String),
  routing: Schema.NullOr(Schema.String),
  event_name: Schema.NullOr(Schema.String),
  provider_status: Schema.NullOr(Schema.Int),
  error_code: Schema.NullOr(Schema.String),
  test: Schema.Boolean,
  created_at: Schema.String
})
export type Delivery = typeof Delivery.Type

export const DeliveryPage = Page(Delivery)
export const DeliveriesQuery = {
  ...PageQuery,
  destination_id: Schema.optionalKey(Schema.String.annotate({ description: "Only this destination's rows" })),
  skip_reason: Schema.optionalKey(Schema.String.annotate({ description: "Only rows with this skip reason (e.g. `no_website_destination`)" }))
}
export type DeliveriesQuery = Schema.Struct.Type<typeof DeliveriesQuery>
