/** The webhook delivery log and redelivery over HTTP (routes.tsv Webhooks; decision 0078). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { InvalidParameter, profileErrors } from "../../../schema/errors.ts"
import { WebhookDeliveriesQuery, WebhookDeliveryPage, WebhookRedelivery } from "../../../schema/webhooks.ts"
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
          "subscription) or the subscription was deleted. `Retry-After` moves the next attempt later."
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
