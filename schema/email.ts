/**
 * The connected mailbox (routes.tsv Email; scope `email`; decision 0080): threads, one thread
 * with its messages, drafts, labels and search, proxied live to the mail provider, which is the
 * source of truth. Addresses and message text are personal data.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, PageQuery } from "./common.ts"
import { NonBlankParam } from "./query.ts"

const Email = Schema.String.check(
  Schema.isMaxLength(320),
  Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "Expected an email address" })
)

export const EmailThread = Schema.Struct({
  id: Schema.String,
  subject: Schema.String,
  /** System labels (`INBOX`, `SENT`, `IMPORTANT`) and the mailbox's own label ids. */
  label_ids: Schema.Array(Schema.String),
  updated_at: Schema.String
}).annotate({ identifier: "EmailThread" })

export const EmailMessage = Schema.Struct({
  id: Schema.String,
  thread_id: Schema.String,
  direction: Schema.Literals(["inbound", "outbound"]),
  /** The RFC 5322 Message-ID. */
  rfc822_message_id: Schema.String,
  in_reply_to: Schema.NullOr(Schema.String),
  from: Schema.String,
  to: Schema.Array(Schema.String),
  subject: Schema.String,
  text: Schema.String,
  delivery_status: Schema.Literals(["received", "sent", "delivered", "failed"]),
  created_at: Schema.String
}).annotate({ identifier: "EmailMessage" })

export const EmailThreadPage = Page(EmailThread)
export const EmailThreadDetail = Schema.Struct({
  data: Schema.Struct({ ...EmailThread.fields, messages: Schema.Array(EmailMessage) })
})
export const EmailMessagePage = Page(EmailMessage)

export const EmailLabel = Schema.Struct({ id: Schema.String, name: Schema.String, type: Schema.Literals(["system", "user"]) })
export const EmailLabelList = Schema.Struct({ data: Schema.Array(EmailLabel) })

export const EmailDraft = Schema.Struct({
  id: Schema.String,
  thread_id: Schema.NullOr(Schema.String),
  to: Schema.Array(Schema.String),
  subject: Schema.String,
  text: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "EmailDraft" })
export const EmailDraftCreated = Schema.Struct({ data: EmailDraft }).pipe(HttpApiSchema.status(201))

export const ThreadsQuery = Schema.Struct({
  ...PageQuery,
  label: Schema.optionalKey(NonBlankParam("only threads carrying this label id"))
})
export type ThreadsQuery = typeof ThreadsQuery.Type

export const SearchQuery = Schema.Struct({
  ...PageQuery,
  q: NonBlankParam("words every hit holds in its subject, text, sender or recipients")
})
export type SearchQuery = typeof SearchQuery.Type

export const ThreadParam = {
  threadId: Schema.String.annotate({ description: "the thread's id at the mail provider" }).check(Schema.isMinLength(1), Schema.isMaxLength(200))
}

const Text = (max: number) => Schema.String.check(Schema.isPattern(/\S/u, { message: "must not be blank" }), Schema.isMaxLength(max))

export const CreateEmailDraft = Schema.Struct({
  to: Schema.Array(Email).check(Schema.isMinLength(1), Schema.isMaxLength(50)),
  subject: Text(998),
  text: Text(100_000),
  /** A thread of the mailbox the draft answers in. */
  thread_id: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)))
})
export type CreateEmailDraft = typeof CreateEmailDraft.Type
