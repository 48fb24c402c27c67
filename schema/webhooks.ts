/**
 * Webhook subscriptions and deliveries (routes.tsv Webhooks; decisions 0076-0078): a profile's
 * endpoints, the event types each receives (lifecycle events opt-in), the `whsec_` secret shown
 * once at creation and rotation, and the delivery log.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Backlog, Page, PageQuery } from "./common.ts"
import { LiteralParam, UuidParam } from "./query.ts"

/** Every event the service pushes (api-endpoints.md, Events). */
export const WEBHOOK_EVENT_TYPES = [
  "outcome.recorded",
  "order.status.changed",
  "leadgen.received",
  "connection.connected",
  "connection.revoked",
  "connection.reconnect_required",
  "channel.health.updated",
  "message.received",
  "experiment.completed"
] as const
export type WebhookEventType = typeof WEBHOOK_EVENT_TYPES[number]

/** Lifecycle events (and the opt-in lead push): delivered only to a subscription that names them (decision 0076). */
export const OPT_IN_EVENT_TYPES: ReadonlyArray<WebhookEventType> = [
  "leadgen.received",
  "connection.connected",
  "connection.revoked",
  "connection.reconnect_required",
  "channel.health.updated",
  "experiment.completed"
]

/** What a subscription receives without `event_types`. */
export const DEFAULT_EVENT_TYPES: ReadonlyArray<WebhookEventType> = WEBHOOK_EVENT_TYPES.filter((type) => !OPT_IN_EVENT_TYPES.includes(type))

export const WebhookEventTypeSchema = Schema.Literals(WEBHOOK_EVENT_TYPES)

const Url = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048)).annotate({
  description: "https URL of a public host (checked at registration and at every attempt; redirects are not followed)"
})
const Description = Schema.String.check(Schema.isMaxLength(500))
const EventTypes = Schema.Array(WebhookEventTypeSchema).check(Schema.isMinLength(1), Schema.isMaxLength(WEBHOOK_EVENT_TYPES.length))

export const WebhookSubscription = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  event_types: Schema.Array(Schema.String),
  /** `active`, `paused` (by the caller or the workspace's archival) or `disabled` (the endpoint answered 410). */
  status: Schema.Literals(["active", "paused", "disabled"]),
  status_reason: Schema.NullOr(Schema.String),
  /** Set while the secret before the last rotation still signs too (24 hours). */
  previous_secret_expires_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  /**
   * Its deliveries waiting, the oldest's age and the last minute's successes (decision 0120). While
   * paused, deliveries older than 72 hours end `failed` with `paused_backlog_expired` and the
   * subscription's `status_reason` becomes `paused_backlog_dropped` (unless it already has one).
   */
  backlog: Backlog
}).annotate({ identifier: "WebhookSubscription" })
export type WebhookSubscription = typeof WebhookSubscription.Type

/** A subscription with its signing secret: answered once, at creation and at each rotation. */
export const WebhookSubscriptionWithSecret = Schema.Struct({
  ...WebhookSubscription.fields,
  secret: Schema.String.annotate({ description: "`whsec_` + base64 key; shown only in this answer" })
}).annotate({ identifier: "WebhookSubscriptionWithSecret" })

/** Single answers ride in `data` like every success body (api-concepts.md, Conventions). */
export const WebhookSubscriptionBody = Schema.Struct({ data: WebhookSubscription }).annotate({ identifier: "WebhookSubscriptionBody" })
export const WebhookSubscriptionSecretBody = Schema.Struct({ data: WebhookSubscriptionWithSecret }).annotate({
  identifier: "WebhookSubscriptionSecretBody"
})
export const WebhookSubscriptionCreated = WebhookSubscriptionSecretBody.pipe(HttpApiSchema.status(201))

export const CreateWebhookSubscription = Schema.Struct({
  url: Url,
  event_types: Schema.optionalKey(EventTypes),
  description: Schema.optionalKey(Description)
})
export type CreateWebhookSubscription = typeof CreateWebhookSubscription.Type

export const UpdateWebhookSubscription = Schema.Struct({
  url: Schema.optionalKey(Url),
  event_types: Schema.optionalKey(EventTypes),
  description: Schema.optionalKey(Schema.NullOr(Description)),
  /** `paused` stops deliveries (they wait); `active` resumes, also after a 410 disabled it. */
  status: Schema.optionalKey(Schema.Literals(["active", "paused"]))
})
export type UpdateWebhookSubscription = typeof UpdateWebhookSubscription.Type

export const WebhookSubscriptionPage = Page(WebhookSubscription)
export const WebhookSubscriptionsQuery = PageQuery

export const WebhookSubscriptionDeleted = Schema.Struct({
  data: Schema.Struct({ id: Schema.String, deleted: Schema.Literal(true) })
}).annotate({ identifier: "WebhookSubscriptionDeleted" })

export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  subscription_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  /** `pending` (waiting for its next attempt), `succeeded` (a 2xx) or `failed` (ladder spent, 410, or subscription deleted). */
  status: Schema.Literals(["pending", "succeeded", "failed"]),
  attempts: Schema.Int,
  next_attempt_at: Schema.NullOr(Schema.String),
  last_attempt_at: Schema.NullOr(Schema.String),
  last_status_code: Schema.NullOr(Schema.Int),
  last_error: Schema.NullOr(Schema.String),
  redelivery_of: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  completed_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type

export const WebhookDeliveryPage = Page(WebhookDelivery)
export const WebhookRedelivery = Schema.Struct({ data: WebhookDelivery }).annotate({ identifier: "WebhookRedelivery" }).pipe(
  HttpApiSchema.status(202)
)

/**
 * One attempt of a delivery (decision 0112): when its request started, the answer's status code
 * (null when none came: a refused target, a timeout, no request sent), how long it took (null when
 * no request was sent), what went wrong (at most 500 characters) and the start of the answer's
 * body (at most 1000 characters, decision 0134), as Stripe and Svix log them.
 */
export const WebhookDeliveryAttempt = Schema.Struct({
  delivery_id: Schema.String.annotate({
    description: "The delivery that made the attempt: the one asked about, or a redelivery of the same event to the same subscription"
  }),
  attempt: Schema.Int.annotate({ description: "The attempt's number within that delivery (1 for the first)" }),
  attempted_at: Schema.String.annotate({ description: "When the attempt's request started (ISO 8601, UTC)" }),
  status_code: Schema.NullOr(Schema.Int).annotate({ description: "The endpoint's HTTP status; null when no answer came" }),
  duration_ms: Schema.NullOr(Schema.Int).annotate({ description: "How long the request took, in milliseconds; null when none was sent" }),
  error: Schema.NullOr(Schema.String).annotate({
    description: "What went wrong besides the status (`redirect_not_followed`, `endpoint_gone`, a network error, ...), at most 500 characters"
  }),
  response_body: Schema.NullOr(Schema.String).annotate({
    description: "The start of the endpoint's answer, as UTF-8 text, at most 1000 characters (decision 0134); null when no answer " +
      "came, it was empty, or the attempt was made before bodies were kept"
  })
}).annotate({ identifier: "WebhookDeliveryAttempt" })
export type WebhookDeliveryAttempt = typeof WebhookDeliveryAttempt.Type

export const WebhookDeliveryAttemptPage = Page(WebhookDeliveryAttempt)
export const WebhookDeliveryAttemptsQuery = PageQuery
export type WebhookDeliveryAttemptsQuery = Schema.Struct.Type<typeof WebhookDeliveryAttemptsQuery>

export const WebhookDeliveriesQuery = {
  ...PageQuery,
  subscription_id: Schema.optionalKey(UuidParam("only this subscription's deliveries")),
  status: Schema.optionalKey(LiteralParam(["pending", "succeeded", "failed"], "only deliveries in this state"))
}
export type WebhookDeliveriesQuery = Schema.Struct.Type<typeof WebhookDeliveriesQuery>
export type WebhookSubscriptionsQuery = Schema.Struct.Type<typeof WebhookSubscriptionsQuery>
