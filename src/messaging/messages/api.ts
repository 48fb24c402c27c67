/**
 * `POST /api/v1/messages` (api-endpoints.md "Partner data, audiences, messaging"; decision 0092).
 * The channel's own scope (`email`, `chat_app_a`, ...): the spec's scope table gives sending on a
 * channel to that channel's scope, which a partner app's channel connect scope mints (decision 0111).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AccountSuspended,
  AdplatformUnavailable,
  AuthRevoked,
  InvalidState,
  MailboxDisabled,
  profileErrors,
  QuotaExceeded,
  RateLimitExceeded,
  RecipientRejected,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { INBOX_CHANNELS } from "../../../schema/inbox.ts"
import { SendMessageBody, SentMessageCreated } from "../../../schema/messages.ts"
import { type OperationPolicy, policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

/** Published and enforced from this one value: the middleware checks `any`, the handler the body's `channel`. */
export const SEND_POLICY: OperationPolicy = {
  scopes: INBOX_CHANNELS,
  scopeMode: "any",
  scopeFrom: "channel",
  auth: PROFILE_PRINCIPALS,
  grain: "profile",
  idempotency: "optional",
  personData: true
}
const send = policy(SEND_POLICY)

export const MessagesApi = HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.post("sendMessage", "/messages", {
      payload: SendMessageBody,
      success: SentMessageCreated,
      error: [
        ...profileErrors,
        ValidationError.wire,
        wireUnprocessable,
        InvalidState.wire,
        RateLimitExceeded.wire,
        AdplatformUnavailable.wire,
        AccountSuspended.wire,
        MailboxDisabled.wire,
        AuthRevoked.wire,
        QuotaExceeded.wire,
        RecipientRejected.wire
      ]
    })
      .annotate(OpenApi.Summary, "Sends one message on a connected channel; answers its thread and the provider's ids")
      .annotate(
        OpenApi.Description,
        "`channel` is `email` or a chat channel (`chat_app_a`, `social_dm`, `page_messenger`, `short_video_messaging`); " +
          "the credential needs that channel's scope (`x-scope-from: body.channel`), else 403 `insufficient_scope`. " +
          "Email: `to` (an address or up to 50), `subject` (required unless `thread_id` continues a thread, then `Re:` " +
          "its subject), `text`, optional `list_unsubscribe: {url, one_click}` written as `List-Unsubscribe: <url>` " +
          "and, with `one_click: true` (https only, else 400 `validation_error`), `List-Unsubscribe-Post: " +
          "List-Unsubscribe=One-Click` (RFC 8058). A chat channel: `to` is the person's id on the platform, `text` " +
          "only. The answer carries `thread_id` (the mail thread or chat conversation an inbound reply lands in), " +
          "`rfc822_message_id` (email), `provider_message_id` and the inbox `conversation_id`. Optional " +
          "`Idempotency-Key` (24-hour replay, a retry sends nothing twice). 409 `invalid_state` (reason " +
          "`<channel>_connection_required`) without a connection; a mailbox refusal is 403 `account_suspended`, " +
          "`mailbox_disabled` or `auth_revoked` (with `reconnect_required: true`), 429 `quota_exceeded` or 422 " +
          "`recipient_rejected`, each with `provider`, `provider_status`, `provider_code`, `provider_message`; a refusal " +
          "sets the connection's health and the next accepted send clears it (event `channel.health.updated`). A chat " +
          "platform's refusal is 422 `validation_error` with its code as `reason`; only an unreachable provider is 502."
      )
      .annotateMerge(send)
  )
  .prefix("/api/v1")
