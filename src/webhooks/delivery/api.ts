/** The webhook delivery log and redelivery over HTTP (routes.tsv Webhooks; decision 0078). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { InvalidParameter, profileErrors } from "../../../schema/errors.ts"
import {
  WebhookDeliveriesQuery,
  WebhookDeliveryAttemptPage,
  WebhookDeliveryAttemptsQuery,
  WebhookDeliveryPage,
  WebhookRedelivery
} from "../../../schema/webhooks.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const IDDESC = "The delivery's id (from the log)"

const read = policy({ scopes: ["connections:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })
const write = policy({ scopes: ["connections:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "optional" })

export const WebhookDeliveriesApi = HttpApiGroup.make("webhookDeliveries")
  .add(
    HttpApiEndpoint.get("list", "/webhooks/deliveries", {
      query: WebhookDeliveriesQuery,
      success: WebhookDeliveryPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The delivery log, newest first: each event per subscription, its attempts and last answer")
      .annotate(
        OpenApi.Description,
        "A delivery is `pending` until a 2xx answer (`succeeded`), or `failed` once the 24-hour ladder (about 0, 5 s, " +
          "5 min, 30 min, 2 h, 5 h, 10 h, 24 h, jittered) is spent, the endpoint answered 410 (which also disables the " +
          "subscription) or the subscription was deleted. `Retry-After` moves the next attempt later. A delivery shows its " +
          "last answer; `GET /api/v1/webhooks/deliveries/{id}/attempts` lists every attempt."
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("attempts", "/webhooks/deliveries/:id/attempts", {
      params: { id: Schema.String.annotate({ description: IDDESC }) },
      query: WebhookDeliveryAttemptsQuery,
      success: WebhookDeliveryAttemptPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "Every attempt of a delivery's event to its subscription, oldest first: time, status code, duration, error, answer")
      .annotate(
        OpenApi.Description,
        "The full attempt log behind a delivery's `attempts` count and `last_*` fields: each attempt's `attempted_at` (when " +
          "its request started), `status_code` (null when no answer came), `duration_ms` (null when no request was sent: a " +
          "deleted or disabled subscription, an unreadable secret), `error` (at most 500 characters) and `response_body` " +
          "(the start of the answer as text, at most 1000 characters; null when none came or it was empty). The log is the " +
          "event's to the subscription: the same for a delivery and its redeliveries, whose attempts are appended with " +
          "their own `delivery_id`. Attempts are kept as long as the delivery. Unknown or another profile's delivery: 404."
      )
      .annotateMerge(read),
    HttpApiEndpoint.post("redeliver", "/webhooks/deliveries/:id/redeliver", {
      params: { id: Schema.String.annotate({ description: IDDESC }) },
      success: WebhookRedelivery,
      error: profileErrors
    })
      .annotate(OpenApi.Summary, "Send a delivery's event again: 202 with the new delivery (same webhook-id, fresh signature)")
      .annotate(
        OpenApi.Description,
        "A new delivery of the same body to the same subscription, due now, on its own ladder; the original stays in the " +
          "log. The subscription must still exist (else 404); a paused or disabled one holds it until it is active."
      )
      .annotateMerge(write)
  )
  .prefix("/api/v1")
