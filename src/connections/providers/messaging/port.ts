/**
 * What the service needs of the messaging providers (`social_dm`, `page_messenger`,
 * `short_video_messaging`; `chat_app_a` adds templates and datasets in ../chat-app-a/port.ts):
 * the connected account, its conversations and messages, sending a text reply. Inbound messages
 * (with the ad referral when a click-to-chat ad started the conversation) and delivery receipts
 * arrive as signed callbacks on `/hooks/{provider}`, not through these calls. The kinds share
 * one model because the real ones are alike; each still has its own service, so a deployment can
 * point each at a different provider.
 */
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"

/** The ad that started a conversation, as the provider reports it on the first inbound message. */
export interface MessageReferral {
  readonly ad_id: string
  readonly source: string
  /** `chat_app_a` only: the click id the ad platform attributes conversions by. */
  readonly ctwa_clid?: string | undefined
  readonly ref?: string | undefined
  readonly headline?: string | undefined
}

export interface MessagingAccount {
  readonly id: string
  readonly name: string
  /** `social_dm` only: `business_login` or `page_login` (issue 20 refuses datasets on the wrong one). */
  readonly login_type: string | null
}

export interface Conversation {
  readonly id: string
  readonly account_id: string
  /** The person's id at the provider (phone number, page-scoped id, ...). */
  readonly contact_id: string
  readonly contact_name: string
  readonly updated_at: string
}

export interface Message {
  readonly id: string
  readonly conversation_id: string
  readonly account_id: string
  readonly direction: "inbound" | "outbound"
  readonly from: string
  readonly to: string
  readonly type: "text" | "template"
  readonly text: string | null
  readonly template: { readonly name: string; readonly language: string } | null
  readonly referral: MessageReferral | null
  readonly status: "received" | "sent" | "delivered" | "read" | "failed"
  readonly created_at: string
}

export interface SentMessage {
  readonly id: string
  readonly conversation_id: string
}

/** The operations every messaging kind has. */
export interface MessagingApi {
  readonly account: (session: ProviderSession) => Effect.Effect<MessagingAccount, ProviderError>
  /** Newest first. */
  readonly conversations: (session: ProviderSession) => Stream.Stream<Conversation, ProviderError>
  /** Oldest first. */
  readonly messages: (session: ProviderSession, conversationId: string) => Stream.Stream<Message, ProviderError>
  readonly getMessage: (session: ProviderSession, messageId: string) => Effect.Effect<Message, ProviderError>
  /**
   * A text reply to someone who has written to the account; anyone else is refused
   * (`ProviderRefused` code `recipient_unavailable`), as the real platforms refuse cold messages.
   */
  readonly sendText: (
    session: ProviderSession,
    request: { readonly recipientId: string; readonly text: string }
  ) => Effect.Effect<SentMessage, ProviderError>
}

export class SocialDm extends Context.Service<SocialDm, MessagingApi>()("svc/SocialDm") {}
export class PageMessenger extends Context.Service<PageMessenger, MessagingApi>()("svc/PageMessenger") {}
export class ShortVideoMessaging extends Context.Service<ShortVideoMessaging, MessagingApi>()("svc/ShortVideoMessaging") {}
