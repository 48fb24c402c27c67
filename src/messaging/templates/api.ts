/**
 * The business chat account's message templates and their analytics (routes.tsv "Partner data,
 * audiences, messaging"; decision 0093), read under `chat_app_a` (the spec's scope for them, which the
 * channel connect scope mints) or its read-only subset `chat_app_a:read` (decision 0111).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CreateTemplateBody,
  TemplateAnalytics,
  TemplateAnalyticsQuery,
  TemplateCreated,
  TemplateList,
  TemplateNameParam,
  TemplatesQuery
} from "../../../schema/chat-surfaces.ts"
import {
  AdplatformUnavailable,
  ChatAppAConnectionRequired,
  InsightsEnabling,
  InsightsUnsupported,
  InvalidContent,
  InvalidDateRange,
  InvalidState,
  PayloadTooLarge,
  profileErrors,
  RateLimitExceeded,
  TemplateNotFound,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const read = policy({ scopes: ["chat_app_a", "chat_app_a:read"], scopeMode: "any", auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

const write = policy({ scopes: ["chat_app_a"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "optional" })

const errors = [
  ...profileErrors,
  ValidationError.wire,
  wireUnprocessable,
  InvalidState.wire,
  ChatAppAConnectionRequired.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

export const ChatTemplatesApi = HttpApiGroup.make("chatTemplates")
  .add(
    HttpApiEndpoint.get("listChatTemplates", "/whatsapp/templates", { query: TemplatesQuery, success: TemplateList, error: errors })
      .annotate(OpenApi.Summary, "Message templates of the business chat account, read live")
      .annotate(OpenApi.Description, "Each with `name`, `language`, `status`, `category`. 409 `chat_app_a_connection_required` without a connection.")
      .annotateMerge(read),
    HttpApiEndpoint.post("createChatTemplate", "/whatsapp/templates", {
      payload: CreateTemplateBody,
      success: TemplateCreated,
      error: [...errors, InvalidContent.wire, PayloadTooLarge.wire]
    })
      .annotate(OpenApi.Summary, "Creates a message template (PENDING until the platform reviews it)")
      .annotate(
        OpenApi.Description,
        "Body `name`, `language`, `category`, `body_text`, and one optional header: `header_text` or " +
          "`header_media: {format: IMAGE | VIDEO | DOCUMENT, url}` (both is 400 `validation_error`). The media URL is " +
          "fetched once (https only, public addresses only, no redirects, 10 s): a wrong type or an unreachable URL is " +
          "422 `invalid_content`; over JPEG/PNG 5 MB, MP4 16 MB or PDF 100 MB is 413 `payload_too_large`. A name " +
          "already used in that language is 409 `invalid_state` (reason `template_exists`). Scope `chat_app_a`; " +
          "optional `Idempotency-Key`."
      )
      .annotateMerge(write),
    HttpApiEndpoint.get("getChatTemplateAnalytics", "/whatsapp/templates/:name/analytics", {
      params: TemplateNameParam,
      query: TemplateAnalyticsQuery,
      success: TemplateAnalytics,
      error: [...errors, InvalidDateRange.wire, TemplateNotFound.wire, InsightsEnabling.wire, InsightsUnsupported.wire]
    })
      .annotate(OpenApi.Summary, "Totals and a daily series of sent, delivered, read, button clicks and cost over UTC days")
      .annotate(
        OpenApi.Description,
        "Query `connection_id`, `language`, `start`, `end` (UTC days, default the last 30; at most 90, else 400 " +
          "`invalid_date_range`). The first call on an account with insights off switches them on and answers 409 " +
          "`insights_enabling` with `retry_after_seconds` (and `Retry-After`); an account type that refuses the switch " +
          "is 422 `insights_unsupported`; an unknown name is 404 `template_not_found`. Answers are cached 15 minutes " +
          "(`fetched_at` says when they were read). Cost in minor units of `currency`."
      )
      .annotateMerge(read)
  )
  .prefix("/api/v1")
