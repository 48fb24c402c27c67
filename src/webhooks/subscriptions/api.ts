/**
 * Webhook subscriptions over HTTP (routes.tsv Webhooks; decision 0076): managed with the
 * profile's key under `connections:read` / `connections:write`.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { InvalidParameter, profileErrors, ValidationError } from "../../../schema/errors.ts"
import {
  CreateWebhookSubscription,
  UpdateWebhookSubscription,
  WebhookSubscriptionBody,
  WebhookSubscriptionCreated,
  WebhookSubscriptionDeleted,
  WebhookSubscriptionPage,
  WebhookSubscriptionsQuery,
  WebhookSubscriptionSecretBody
} from "../../../schema/webhooks.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const IDDESC = "The subscription's id"

const read = policy({ scopes: ["connections:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })
// No Idempotency-Key replay on the routes that answer a secret: a replay store would keep it in clear (as API keys).
const write = policy({ scopes: ["connections:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

export const WebhookSubscriptionsApi = HttpApiGroup.make("webhookSubscriptions")
  .add(
    HttpApiEndpoint.get("list", "/webhooks/subscriptions", {
      query: WebhookSubscriptionsQuery,
      success: WebhookSubscriptionPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The profile's webhook subscriptions (secrets are never shown again)")
      .annotate(
        OpenApi.Description,
        "Oldest first, paged by `cursor`; deleted subscriptions are not listed. Each carries its `backlog`: deliveries " +
          "waiting, the oldest's age and the last minute's successes, read at answer time."
      )
      .annotateMerge(read),
    HttpApiEndpoint.post("create", "/webhooks/subscriptions", {
      payload: CreateWebhookSubscription,
      success: WebhookSubscriptionCreated,
      error: [...profileErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Register an endpoint: 201 with its whsec_ secret, shown only in this answer")
      .annotate(
        OpenApi.Description,
        "`url` must be an https URL of a public host: the host is resolved and every address must be public (not " +
          "private, loopback, link-local, CGNAT, ULA or metadata), else 400 `validation_error` with `reason` " +
          "`host_not_public`, `host_unresolvable`, `url_scheme` or `url_invalid`. The rule is checked again at every " +
          "attempt and redirects are never followed. Without `event_types`: `outcome.recorded`, `order.status.changed`, " +
          "`message.received`; lifecycle events (`connection.*`, `channel.health.updated`, `experiment.completed`) and `leadgen.received` are " +
          "opt-in. Deliveries are signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`)."
      )
      .annotateMerge(write),
    HttpApiEndpoint.patch("update", "/webhooks/subscriptions/:id", {
      params: { id: Schema.String.annotate({ description: IDDESC }) },
      payload: UpdateWebhookSubscription,
      success: WebhookSubscriptionBody,
      error: [...profileErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Change the URL, event types or description; `status: paused` pauses, `active` resumes")
      .annotate(
        OpenApi.Description,
        "While paused, events still queue for the subscription and are delivered, in order, once it is active again; " +
          "a delivery held more than 72 hours ends `failed` with `last_error` `paused_backlog_expired`, and the " +
          "subscription's `status_reason` becomes `paused_backlog_dropped` (unless it already has one) until it is resumed. " +
          "A subscription disabled by a 410 answer is turned back on with `status: active` (its URL is checked again)."
      )
      .annotateMerge(write),
    HttpApiEndpoint.delete("remove", "/webhooks/subscriptions/:id", {
      params: { id: Schema.String.annotate({ description: IDDESC }) },
      success: WebhookSubscriptionDeleted,
      error: profileErrors
    })
      .annotate(OpenApi.Summary, "Delete a subscription; its waiting deliveries end failed")
      .annotate(OpenApi.Description, "Nothing more is sent to it; its deliveries stay in the log, the waiting ones `failed` with `subscription_deleted`.")
      .annotateMerge(write),
    HttpApiEndpoint.post("rotateSecret", "/webhooks/subscriptions/:id/rotate-secret", {
      params: { id: Schema.String.annotate({ description: IDDESC }) },
      success: WebhookSubscriptionSecretBody,
      error: profileErrors
    })
      .annotate(OpenApi.Summary, "A new signing secret, shown once; the previous one also signs for 24 hours")
      .annotate(
        OpenApi.Description,
        "For 24 hours after a rotation every delivery carries two signatures in `webhook-signature` (new first, " +
          "space-separated), so a receiver can switch secrets without dropping a delivery."
      )
      .annotateMerge(write)
  )
  .prefix("/api/v1")
