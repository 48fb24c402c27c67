/**
 * A mail provider as the service needs it: the connected mailbox, its threads and messages, and
 * sending. Inbound mail and delivery-status reports (RFC 3464 `multipart/report`, read with
 * ./dsn.ts) arrive as signed callbacks on `/hooks/email`.
 */
import type { Effect, Stream } from "effect"
import { Context, Data } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"

export interface Mailbox {
  readonly id: string
  readonly address: string
  readonly name: string
  readonly state: string
}

export interface MailThread {
  readonly id: string
  readonly mailbox_id: string
  readonly subject: string
  /** System labels (`INBOX`, `SENT`, `IMPORTANT`) and the mailbox's own. */
  readonly label_ids: ReadonlyArray<string>
  readonly updated_at: string
}

export interface MailLabel {
  readonly id: string
  readonly name: string
  readonly type: "system" | "user"
}

export interface MailDraft {
  readonly id: string
  readonly thread_id: string | null
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly text: string
  readonly updated_at: string
}

export interface MailMessage {
  readonly id: string
  readonly thread_id: string
  readonly mailbox_id: string
  readonly direction: "inbound" | "outbound"
  readonly message_id_header: string
  readonly in_reply_to: string | null
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly text: string
  readonly content_type: string
  /** Extra header fields the sender set (e.g. the RFC 8058 `List-Unsubscribe` pair). */
  readonly headers: Readonly<Record<string, string>>
  readonly delivery_status: "received" | "sent" | "delivered" | "failed"
  readonly created_at: string
}

export interface SentMail {
  readonly id: string
  readonly thread_id: string
  readonly message_id_header: string
}

export interface OutgoingMail {
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly text: string
  readonly threadId?: string
  readonly inReplyTo?: string
  /** `List-Unsubscribe`, `List-Unsubscribe-Post` or `X-*` fields. */
  readonly headers?: Readonly<Record<string, string>>
  /** Files sent with the text (the message goes as `multipart/mixed`). */
  readonly attachments?: ReadonlyArray<MailAttachment>
}

export interface MailAttachment {
  readonly filename: string
  readonly contentType: string
  readonly content: Uint8Array
}

/**
 * Why the provider refused a send, in the words the service answers with; a dead grant is
 * `ProviderAuthRevoked` instead (the service's `auth_revoked`).
 */
export const EMAIL_REFUSALS = ["account_suspended", "mailbox_disabled", "quota_exceeded", "recipient_rejected"] as const
export type EmailRefusal = typeof EMAIL_REFUSALS[number]

export class EmailSendRefused extends Data.TaggedError("EmailSendRefused")<{
  readonly reason: EmailRefusal
  readonly detail: string
  /** The provider's own HTTP status and error code, answered as `provider_status` and `provider_code`. */
  readonly providerStatus?: number | undefined
  readonly providerCode?: string | undefined
}> {}

export class Email extends Context.Service<Email, {
  readonly mailbox: (session: ProviderSession) => Effect.Effect<Mailbox, ProviderError>
  /** Most recently active first. */
  readonly threads: (session: ProviderSession) => Stream.Stream<MailThread, ProviderError>
  readonly threadMessages: (session: ProviderSession, threadId: string) => Stream.Stream<MailMessage, ProviderError>
  readonly getMessage: (session: ProviderSession, messageId: string) => Effect.Effect<MailMessage, ProviderError>
  /** A new thread, or a reply in `threadId` (`inReplyTo` the Message-ID answered). */
  readonly send: (session: ProviderSession, mail: OutgoingMail) => Effect.Effect<SentMail, ProviderError | EmailSendRefused>
  /** Messages whose subject, text, sender or recipients hold every word of `query`, newest first. */
  readonly search: (session: ProviderSession, query: string) => Stream.Stream<MailMessage, ProviderError>
  readonly labels: (session: ProviderSession) => Effect.Effect<ReadonlyArray<MailLabel>, ProviderError>
  readonly setThreadLabels: (
    session: ProviderSession,
    threadId: string,
    change: { readonly add?: ReadonlyArray<string>; readonly remove?: ReadonlyArray<string> }
  ) => Effect.Effect<MailThread, ProviderError>
  readonly drafts: (session: ProviderSession) => Stream.Stream<MailDraft, ProviderError>
  readonly createDraft: (
    session: ProviderSession,
    draft: { readonly to: ReadonlyArray<string>; readonly subject: string; readonly text: string; readonly threadId?: string }
  ) => Effect.Effect<MailDraft, ProviderError>
  /** Sends the draft (the same refusals as `send`); the provider drops the draft once sent. */
  readonly sendDraft: (session: ProviderSession, draftId: string) => Effect.Effect<SentMail, ProviderError | EmailSendRefused>
}>()("svc/Email") {}
