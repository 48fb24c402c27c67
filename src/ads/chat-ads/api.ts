/**
 * Click-to-chat ads and their welcome message (routes.tsv "Partner data, audiences, messaging";
 * decision 0093), read under `chat_app_a` (the spec's scope for them, which the
 * channel connect scope mints) or its read-only subset `chat_app_a:read` (decision 0111).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { AdParam, AdWelcome, ChatAdPage, ChatAdsQuery } from "../../../schema/chat-surfaces.ts"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  InvalidState,
  profileErrors,
  RateLimitExceeded,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const read = policy({ scopes: ["chat_app_a", "chat_app_a:read"], scopeMode: "any", auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

const errors = [
  ...profileErrors,
  ValidationError.wire,
  wireUnprocessable,
  InvalidState.wire,
  AdplatformConnectionRequired.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

export const ChatAdsApi = HttpApiGroup.make("chatAds")
  .add(
    HttpApiEndpoint.get("listChatAds", "/partner/whatsapp/ads", { query: ChatAdsQuery, success: ChatAdPage, error: errors })
      .annotate(OpenApi.Summary, "Click-to-chat ads of the profile's ad account, with destination, call to action and greeting")
      .annotate(
        OpenApi.Description,
        "Read live from the ad platform: `destination` (`type`, `phone_number`, `page_id`), `call_to_action_type`, " +
          "`greeting` and `greeting_status`; no spend, no personal data. Keyset by `ad_id` (`limit` 1 to 100, " +
          "`cursor`). 409 `adplatform_connection_required` without a usable ad-platform connection."
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("getChatAdWelcome", "/partner/whatsapp/ads/:ad_id/welcome-message", { params: AdParam, success: AdWelcome, error: errors })
      .annotate(OpenApi.Summary, "The welcome message of a click-to-chat ad: greeting, pre-filled text, ice-breaker buttons")
      .annotate(
        OpenApi.Description,
        "`welcome: null` when none is configured. 404 `not_found` when the platform does not show the ad to the " +
          "connection; 409 `adplatform_connection_required` without a usable ad-platform connection."
      )
      .annotateMerge(read)
  )
  .prefix("/api/v1")
