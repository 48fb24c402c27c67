/**
 * `POST /api/v1/messages` (api-endpoints.md "Partner data, audiences, messaging"; decision 0092):
 * one message on a connected channel. Email opens a thread (or continues `thread_id`), optionally
 * with the RFC 8058 one-click unsubscribe pair; a chat channel writes to a person by the
 * platform's id.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { INBOX_CHANNELS } from "./inbox.ts"

const Text = (max: number) => Schema.String.check(Schema.isPattern(/\S/u, { message: "must not be blank" }), Schema.isMaxLength(max))

/** An email address as a mailbox accepts it: one `@`, no spaces or angle brackets. */
const Address = Schema.String.check(
  Schema.isMaxLength(320),
  Schema.isPattern(/^[^\s@<>,;"]+@[^\s@<>,;"]+\.[^\s@<>,;"]+$/u, { message: "must be an email address" })
)

export const ListUnsubscribe = Schema.Struct({
  /** `https:` or `mailto:`; `one_click: true` needs `https:` (RFC 8058). */
  url: Schema.String.check(Schema.isMinLength(8), Schema.isMaxLength(2000)),
  one_click: Schema.optionalKey(Schema.Boolean)
})

export const SendMessageBody = Schema.Struct({
  channel: Schema.Literals(INBOX_CHANNELS),
  /** Email: one address or up to 50; a chat channel: the person's id on the platform (one). */
  to: Schema.Union([Text(320), Schema.Array(Text(320)).check(Schema.isMinLength(1), Schema.isMaxLength(50))]),
  /** Email only: required unless `thread_id` continues a thread. */
  subject: Schema.optionalKey(Text(998)),
  /** Email only: the mail thread to continue (the `thread_id` an earlier send answered). */
  thread_id: Schema.optionalKey(Text(200)),
  text: Text(100_000),
  /** Email only. */
  list_unsubscribe: Schema.optionalKey(ListUnsubscribe)
})
export type SendMessageBody = typeof SendMessageBody.Type

const isAddress = Schema.is(Address)
export const isEmailAddress = (value: string): boolean => isAddress(value)

export const SentMessage = Schema.Struct({
  /** The message's id in the inbox copy (`GET /api/v1/conversations/{conversation_id}` lists it). */
  id: Schema.String,
  channel: Schema.Literals(INBOX_CHANNELS),
  conversation_id: Schema.String,
  /** The provider's thread (email) or conversation (chat) id; an inbound reply lands in the same one. */
  thread_id: Schema.String,
  /** Email only: the RFC 5322 Message-ID; null on chat channels. */
  rfc822_message_id: Schema.NullOr(Schema.String),
  provider_message_id: Schema.String,
  to: Schema.Array(Schema.String),
  status: Schema.String,
  sent_at: Schema.String
}).annotate({ identifier: "SentMessage" })

export const SentMessageCreated = Schema.Struct({ data: SentMessage }).pipe(HttpApiSchema.status(201))
