/**
 * The business-chat platform (`chat_app_a`) as the service needs it: the business account and
 * its phone numbers, message templates and their daily analytics, conversations and messages
 * (text and template sends), and the business account's dataset for conversion events (issue
 * 20). Inbound messages carry the click-to-chat referral (`ad_id`, `ctwa_clid`) and arrive as
 * signed callbacks on `/hooks/chat_app_a`.
 */
import type { Effect, Option, Stream } from "effect"
import { Context, Data } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"
import type { ConversionEvent } from "../adplatform/port.ts"
import type { Conversation, Message, SentMessage } from "../messaging/port.ts"

export interface BusinessAccount {
  readonly id: string
  readonly name: string
  readonly currency: string
  readonly timezone: string
  /** Template analytics: `off` until first asked for, `enabling` for a while, then `on`. */
  readonly insights: "off" | "enabling" | "on"
}

export interface PhoneNumber {
  readonly id: string
  readonly display_phone_number: string
  readonly verified_name: string
}

export interface MessageTemplate {
  readonly id: string
  readonly name: string
  readonly language: string
  readonly status: "APPROVED" | "PENDING" | "REJECTED" | "PAUSED"
  readonly category: "MARKETING" | "UTILITY" | "AUTHENTICATION"
}

/** A template to create: a text header or a media one (already checked by the service), a body. */
export interface NewTemplate {
  readonly name: string
  readonly language: string
  readonly category: MessageTemplate["category"]
  readonly headerText?: string
  readonly headerMedia?: { readonly format: "IMAGE" | "VIDEO" | "DOCUMENT"; readonly url: string }
  readonly bodyText: string
}

/** One template's day; `cost_minor` in the business account's currency. */
export interface TemplateAnalyticsDay {
  readonly template_id: string
  readonly date: string
  readonly sent: number
  readonly delivered: number
  readonly read: number
  readonly button_clicks: number
  readonly cost_minor: number
  readonly currency: string
}

export interface ChatDataset {
  readonly id: string
  readonly name: string
}

/**
 * The account's template analytics were off: the platform switched them on and has no figures
 * yet. Ask again after `retryAfterSeconds`.
 */
export class TemplateInsightsEnabling extends Data.TaggedError("TemplateInsightsEnabling")<{
  readonly retryAfterSeconds: number
}> {}

export class ChatAppA extends Context.Service<ChatAppA, {
  readonly businessAccount: (session: ProviderSession) => Effect.Effect<BusinessAccount, ProviderError>
  readonly phoneNumbers: (session: ProviderSession) => Effect.Effect<ReadonlyArray<PhoneNumber>, ProviderError>
  readonly templates: (session: ProviderSession) => Stream.Stream<MessageTemplate, ProviderError>
  /** Days `since`..`until` inclusive (YYYY-MM-DD); every template of the account unless `templateIds`. */
  readonly templateAnalytics: (
    session: ProviderSession,
    request: { readonly since: string; readonly until: string; readonly templateIds?: ReadonlyArray<string> }
  ) => Effect.Effect<ReadonlyArray<TemplateAnalyticsDay>, ProviderError | TemplateInsightsEnabling>
  /**
   * A new template, `PENDING` until the platform reviews it (issue 21 part 6). Refused with
   * `ProviderRefused` 409 `template_exists` for a name already used in that language.
   */
  readonly createTemplate: (session: ProviderSession, template: NewTemplate) => Effect.Effect<MessageTemplate, ProviderError>
  readonly conversations: (session: ProviderSession) => Stream.Stream<Conversation, ProviderError>
  readonly messages: (session: ProviderSession, conversationId: string) => Stream.Stream<Message, ProviderError>
  readonly getMessage: (session: ProviderSession, messageId: string) => Effect.Effect<Message, ProviderError>
  readonly sendText: (
    session: ProviderSession,
    request: { readonly phoneNumberId: string; readonly to: string; readonly text: string }
  ) => Effect.Effect<SentMessage, ProviderError>
  /** Refused with `ProviderRefused` `template_not_found` or `template_not_approved`. */
  readonly sendTemplate: (
    session: ProviderSession,
    request: {
      readonly phoneNumberId: string
      readonly to: string
      readonly template: { readonly name: string; readonly language: string }
    }
  ) => Effect.Effect<SentMessage, ProviderError>
  readonly dataset: (session: ProviderSession) => Effect.Effect<Option.Option<ChatDataset>, ProviderError>
  /** Idempotent: a business account has at most one dataset, which this answers if it exists. */
  readonly createDataset: (session: ProviderSession) => Effect.Effect<ChatDataset, ProviderError>
  /**
   * Conversions from chats to the dataset: `action_source: "business_messaging"`,
   * `messaging_channel: "chat_app_a"` and `user_data.ctwa_clid` (refused otherwise); answers how
   * many the platform accepted.
   */
  readonly sendEvents: (
    session: ProviderSession,
    datasetId: string,
    events: ReadonlyArray<ConversionEvent & { readonly messaging_channel: "chat_app_a" }>
  ) => Effect.Effect<{ readonly events_received: number }, ProviderError>
}>()("svc/ChatAppA") {}
