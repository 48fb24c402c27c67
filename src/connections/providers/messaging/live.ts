/**
 * The messaging kinds over HTTP (`/v1/accounts/<id>`, `/v1/accounts/<id>/conversations`,
 * `/v1/conversations/<id>/messages`, `/v1/messages/<id>`, `POST /v1/accounts/<id>/messages`),
 * through the one provider client (bucket per connection, retries, spans). `chat_app_a` reuses
 * the conversation reads here.
 */
import { Effect, Layer, Schema } from "effect"
import { ProviderEndpoints } from "../endpoints.ts"
import { ProviderHttp } from "../http.ts"
import type { ProviderSession } from "../oauth/port.ts"
import { apiPath as path, sessionCall, sessionPages } from "../session-http.ts"
import { type MessagingApi, PageMessenger, ShortVideoMessaging, SocialDm } from "./port.ts"

const Referral = Schema.Struct({
  ad_id: Schema.String,
  source: Schema.String,
  ctwa_clid: Schema.optional(Schema.String),
  ref: Schema.optional(Schema.String),
  headline: Schema.optional(Schema.String)
})

export const ConversationWire = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  contact_id: Schema.String,
  contact_name: Schema.String,
  updated_at: Schema.String
})

export const MessageWire = Schema.Struct({
  id: Schema.String,
  conversation_id: Schema.String,
  account_id: Schema.String,
  direction: Schema.Literals(["inbound", "outbound"]),
  from: Schema.String,
  to: Schema.String,
  type: Schema.Literals(["text", "template"]),
  text: Schema.NullOr(Schema.String),
  template: Schema.NullOr(Schema.Struct({ name: Schema.String, language: Schema.String })),
  referral: Schema.NullOr(Referral),
  status: Schema.Literals(["received", "sent", "delivered", "read", "failed"]),
  created_at: Schema.String
})

export const SentWire = Schema.Struct({ id: Schema.String, conversation_id: Schema.String })

const AccountWire = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  login_type: Schema.optional(Schema.String)
})

type Http = typeof ProviderHttp.Service

export const conversationReads = (http: Http) => ({
  conversations: (session: ProviderSession) =>
    sessionPages(http, session, "conversations", ConversationWire, path("accounts", session.accountId, "conversations")),
  messages: (session: ProviderSession, conversationId: string) =>
    sessionPages(http, session, "messages", MessageWire, path("conversations", conversationId, "messages")),
  getMessage: (session: ProviderSession, messageId: string) =>
    sessionCall(http, session, "getMessage", MessageWire, { method: "GET", path: path("messages", messageId) })
})

export const messagingApi = (http: Http): MessagingApi => ({
  account: (session) =>
    sessionCall(http, session, "account", AccountWire, { method: "GET", path: path("accounts", session.accountId) }).pipe(
      Effect.map((account) => ({ id: account.id, name: account.name, login_type: account.login_type ?? null }))
    ),
  ...conversationReads(http),
  sendText: (session, request) =>
    sessionCall(http, session, "sendText", SentWire, {
      method: "POST",
      path: path("accounts", session.accountId, "messages"),
      json: { recipient_id: request.recipientId, text: request.text },
      idempotent: false
    })
})

const messagingLive = Effect.gen(function*() {
  return messagingApi(yield* ProviderHttp)
})

export const SocialDmAdapter = Layer.effect(SocialDm)(messagingLive)
export const PageMessengerAdapter = Layer.effect(PageMessenger)(messagingLive)
export const ShortVideoMessagingAdapter = Layer.effect(ShortVideoMessaging)(messagingLive)

/** The three kinds with the HTTP client and the endpoints they need (AppConfig from below). */
export const MessagingLayer = Layer.mergeAll(SocialDmAdapter, PageMessengerAdapter, ShortVideoMessagingAdapter).pipe(
  Layer.provide(ProviderHttp.layer),
  Layer.provide(ProviderEndpoints.layer)
)
