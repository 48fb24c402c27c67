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
  readonly delivery_status: "received" | "sent" | "delivered" | "failed"
  readonly created_at: string
}

export interface SentMail {
  readonly id: string
  readonly thread_id: string
  readonly message_id_header: string
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
}> {}

export class Email extends Context.Service<Email, {
  readonly mailbox: (session: ProviderSession) => Effect.Effect<Mailbox, ProviderError>
  /** Most recently active first. */
  readonly threads: (session: ProviderSession) => Stream.Stream<MailThread, ProviderError>
  readonly threadMessages: (session: ProviderSession, threadId: string) => Stream.Stream<MailMessage, ProviderError>
  readonly getMessage: (session: ProviderSession, messageId: string) => Effect.Effect<MailMessage, ProviderError>
  /** A new thread, or a reply in `threadId` (`inReplyTo` the Message-ID answered). */
  readonly send: (
    session: ProviderSession,
    mail: {
      readonly to: ReadonlyArray<string>
      readonly subject: string
      readonly text: string
      readonly threadId?: string
      readonly inReplyTo?: string
    }
  ) => Effect.Effect<SentMail, ProviderError | EmailSendRefused>
}>()("svc/Email") {}
