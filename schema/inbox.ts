/**
 * The unified inbox (routes.tsv Inbox; `conversations:read`, `conversations:write`; decision
 * 0079): conversations of the chat channels and the mailbox in one list, their messages, replies,
 * drafts, the inbox's own labels, the linked customer, and identifiers proposed from inbound
 * messages. Everything here is personal data.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, PageQuery } from "./common.ts"
import { LiteralParam, NonBlankParam, UuidParam } from "./query.ts"

export const INBOX_CHANNELS = ["chat_app_a", "social_dm", "page_messenger", "short_video_messaging", "email"] as const
export type InboxChannel = typeof INBOX_CHANNELS[number]

export const MAX_LABELS = 20

export const InboxMessage = Schema.Struct({
  id: Schema.String,
  direction: Schema.Literals(["inbound", "outbound"]),
  /** The provider's id of the sender (a phone number, a page-scoped id, an email address). */
  sender: Schema.String,
  text: Schema.NullOr(Schema.String),
  status: Schema.String,
  provider_message_id: Schema.String,
  /** Email only: the RFC 5322 Message-ID. */
  rfc822_message_id: Schema.NullOr(Schema.String),
  sent_at: Schema.String
}).annotate({ identifier: "InboxMessage" })

export const Conversation = Schema.Struct({
  id: Schema.String,
  channel: Schema.Literals(INBOX_CHANNELS),
  /** The provider's conversation id (the mail thread id for email). */
  provider_conversation_id: Schema.String,
  contact: Schema.Struct({ id: Schema.String, name: Schema.NullOr(Schema.String) }),
  subject: Schema.NullOr(Schema.String),
  labels: Schema.Array(Schema.String),
  /** The linked customer's `customer_key`; null when none is linked (or it has no key). */
  customer_key: Schema.NullOr(Schema.String),
  customer_linked: Schema.Boolean,
  pending_proposals: Schema.Int,
  last_message_at: Schema.String,
  created_at: Schema.String
}).annotate({ identifier: "Conversation" })

export const InboxDraft = Schema.Struct({
  id: Schema.String,
  conversation_id: Schema.String,
  text: Schema.String,
  /** Email only: the draft's id in the mailbox. */
  provider_draft_id: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "InboxDraft" })

export const ConversationPage = Page(Conversation)
export const ConversationBody = Schema.Struct({ data: Conversation })
export const ConversationDetail = Schema.Struct({
  data: Schema.Struct({ ...Conversation.fields, messages: Schema.Array(InboxMessage), drafts: Schema.Array(InboxDraft) })
})
export const InboxMessageCreated = Schema.Struct({ data: InboxMessage }).pipe(HttpApiSchema.status(201))
export const InboxDraftCreated = Schema.Struct({ data: InboxDraft }).pipe(HttpApiSchema.status(201))

export const ExtractionProposal = Schema.Struct({
  id: Schema.String,
  conversation_id: Schema.String,
  message_id: Schema.String,
  identifier_type: Schema.Literals(["email", "phone"]),
  value: Schema.String,
  status: Schema.Literals(["pending", "approved", "rejected"]),
  decided_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "ExtractionProposal" })
export const ExtractionProposalList = Schema.Struct({ data: Schema.Array(ExtractionProposal) })
export const ExtractionProposalBody = Schema.Struct({ data: ExtractionProposal })

export const ConversationsQuery = Schema.Struct({
  ...PageQuery,
  channel: Schema.optionalKey(LiteralParam(INBOX_CHANNELS, "only this channel's conversations")),
  label: Schema.optionalKey(NonBlankParam("only conversations carrying this label"))
})
export type ConversationsQuery = typeof ConversationsQuery.Type

export const ConversationParam = { conversationId: UuidParam("the conversation's id") }
export const ProposalParam = { proposalId: UuidParam("the proposal's id") }

const Text = (max: number) => Schema.String.check(Schema.isPattern(/\S/u, { message: "must not be blank" }), Schema.isMaxLength(max))

export const ReplyBody = Schema.Struct({ text: Text(4096) })
export type ReplyBody = typeof ReplyBody.Type

export const DraftBody = Schema.Struct({ text: Text(100_000) })
export type DraftBody = typeof DraftBody.Type

const Label = Schema.String.check(
  Schema.isPattern(/^[\p{L}\p{N}][\p{L}\p{N} _.:-]{0,49}$/u, { message: "a label is 1 to 50 letters, digits, spaces or _ . : -" })
)

export const LabelsBody = Schema.Struct({ labels: Schema.Array(Label).check(Schema.isMaxLength(MAX_LABELS)) })
export type LabelsBody = typeof LabelsBody.Type

export const LinkCustomerBody = Schema.Struct({ customer_key: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)) })
export type LinkCustomerBody = typeof LinkCustomerBody.Type

export const DecideBody = Schema.Struct({ decision: Schema.Literals(["approve", "reject"]) })
export type DecideBody = typeof DecideBody.Type
