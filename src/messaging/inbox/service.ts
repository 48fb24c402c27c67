/**
 * The unified inbox (decision 0079): conversations of the chat channels and the mailbox, read
 * from the service's copy. The copy is fed by the providers' pushes (`ingestPushed`, for the
 * callback path) and by a backfill through each channel's port, run when the list is read and
 * the connection's last backfill is older than `BACKFILL_EVERY_SECONDS`. Replies and email
 * drafts go out through the channel's port on its current connection and are recorded in the
 * copy. Identifiers found in inbound text become proposals; an approved one is attached to the
 * linked customer through the customers repository.
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import {
  AccountSuspended,
  AuthRevoked,
  CustomerNotFound,
  type DatabaseUnavailable,
  type InsufficientScope,
  type InvalidParameter,
  InvalidState,
  MailboxDisabled,
  NotFound,
  QuotaExceeded,
  RecipientRejected
} from "../../../schema/errors.ts"
import type {
  ConversationsQuery,
  DecideBody,
  DraftBody,
  InboxChannel,
  LabelsBody,
  LinkCustomerBody,
  ReplyBody
} from "../../../schema/inbox.ts"
import { INBOX_CHANNELS } from "../../../schema/inbox.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { type LiveCallError, liveCaller } from "../../connections/live-call.ts"
import { ConnectionHealth } from "../../connections/health/service.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { IdentityIntake } from "../../identity/intake.ts"
import { authRevoked as mailboxAuthRevoked } from "../email/service.ts"
import { keysetCursor, pageOf } from "../../platform/pagination.ts"
import { ChatAppA } from "../../connections/providers/chat-app-a/port.ts"
import { Email, type EmailSendRefused, type MailMessage } from "../../connections/providers/email/port.ts"
import { type Message, type MessagingApi, PageMessenger, ShortVideoMessaging, SocialDm } from "../../connections/providers/messaging/port.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"
import { HealthcareCheck } from "../../accounts/healthcare.ts"
import { extractIdentifiers } from "./extract.ts"
import { type ConversationRow, type DraftRow, InboxRepo, type MessageRow, type NewMessage, type ProposalRow } from "./repo.ts"

/** A read refreshes a connection's copy at most this often; pushes keep it current in between. */
const BACKFILL_EVERY_SECONDS = 20
/** Conversations (most recent first) and messages per conversation a backfill reads. */
const BACKFILL_CONVERSATIONS = 25
const BACKFILL_MESSAGES = 200
/** Messages a conversation read answers: the newest, oldest first. */
const CONVERSATION_MESSAGES = 200
const DEFAULT_LIMIT = 50

const isInboxChannel = (value: string): value is InboxChannel => (INBOX_CHANNELS as ReadonlyArray<string>).includes(value)

export const renderConversation = (row: ConversationRow) => ({
  id: row.id,
  channel: row.channel,
  provider_conversation_id: row.provider_conversation_id,
  contact: { id: row.contact_id, name: row.contact_name },
  subject: row.subject,
  labels: row.labels,
  customer_key: row.customer_key,
  customer_linked: row.customer_id !== null,
  pending_proposals: row.pending_proposals,
  last_message_at: row.last_message_at,
  created_at: row.created_at
})

const renderMessage = (row: MessageRow) => ({
  id: row.id,
  direction: row.direction,
  sender: row.sender,
  text: row.body,
  status: row.status,
  provider_message_id: row.provider_message_id,
  rfc822_message_id: row.rfc822_message_id,
  sent_at: row.sent_at
})

const renderDraft = (row: DraftRow) => ({
  id: row.id,
  conversation_id: row.conversation_id,
  text: row.body,
  provider_draft_id: row.provider_draft_id,
  created_at: row.created_at
})

const renderProposal = (row: ProposalRow) => ({
  id: row.id,
  conversation_id: row.conversation_id,
  message_id: row.message_id,
  identifier_type: row.identifier_type,
  value: row.value,
  status: row.status,
  decided_at: row.decided_at,
  created_at: row.created_at
})

type RenderedConversation = ReturnType<typeof renderConversation>
type RenderedMessage = ReturnType<typeof renderMessage>
type RenderedDraft = ReturnType<typeof renderDraft>
type RenderedProposal = ReturnType<typeof renderProposal>

export type SendRefusal = AccountSuspended | MailboxDisabled | AuthRevoked | QuotaExceeded | RecipientRejected
export type InboxError = LiveCallError | SendRefusal

/** A mailbox refusal in the spec's words, with the provider's own (decision 0080). */
export const mailboxRefusal = (refused: EmailSendRefused): SendRefusal => {
  const fields = {
    message: `The mailbox provider refused the send: ${refused.detail.slice(0, 200)}`,
    provider: "email",
    ...(refused.providerStatus === undefined ? {} : { provider_status: refused.providerStatus }),
    provider_code: refused.providerCode ?? refused.reason,
    provider_message: refused.detail.slice(0, 200)
  }
  switch (refused.reason) {
    case "account_suspended":
      return new AccountSuspended(fields)
    case "mailbox_disabled":
      return new MailboxDisabled(fields)
    case "quota_exceeded":
      return new QuotaExceeded(fields)
    case "recipient_rejected":
      return new RecipientRejected(fields)
  }
}

const replySubject = (subject: string | null) => {
  const base = subject ?? ""
  return /^re:/i.test(base) ? base : `Re: ${base}`
}

/** What a send answers: the provider's message id, who sent it, and for mail its Message-ID. */
interface Sent {
  readonly id: string
  readonly sender: string
  readonly rfc822: string | null
}

/** A sent message as `recordOutbound` takes it. */
export interface OutboundMessage {
  readonly providerMessageId: string
  readonly sender: string
  readonly text: string
  readonly rfc822MessageId: string | null
  readonly sentAt: string
}

const notFound = (id: string) => new NotFound({ message: `Conversation ${id} was not found.` })

export class Inbox extends Context.Service<Inbox, {
  readonly list: (
    profile: ProfileContext,
    query: ConversationsQuery
  ) => Effect.Effect<
    { readonly data: ReadonlyArray<RenderedConversation>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } },
    DatabaseUnavailable | InsufficientScope | InvalidParameter
  >
  readonly get: (
    profile: ProfileContext,
    id: string
  ) => Effect.Effect<
    RenderedConversation & { readonly messages: ReadonlyArray<RenderedMessage>; readonly drafts: ReadonlyArray<RenderedDraft> },
    NotFound | DatabaseUnavailable | InsufficientScope
  >
  readonly reply: (profile: ProfileContext, id: string, body: ReplyBody) => Effect.Effect<RenderedMessage, InboxError>
  readonly draft: (profile: ProfileContext, id: string, body: DraftBody) => Effect.Effect<RenderedDraft, InboxError>
  readonly setLabels: (profile: ProfileContext, id: string, body: LabelsBody) => Effect.Effect<RenderedConversation, NotFound | DatabaseUnavailable>
  readonly linkCustomer: (
    profile: ProfileContext,
    id: string,
    body: LinkCustomerBody
  ) => Effect.Effect<RenderedConversation, NotFound | CustomerNotFound | DatabaseUnavailable>
  readonly unlinkCustomer: (profile: ProfileContext, id: string) => Effect.Effect<RenderedConversation, NotFound | DatabaseUnavailable>
  readonly proposals: (
    profile: ProfileContext,
    id: string
  ) => Effect.Effect<ReadonlyArray<RenderedProposal>, NotFound | DatabaseUnavailable | InsufficientScope>
  readonly decide: (
    profile: ProfileContext,
    proposalId: string,
    body: DecideBody
  ) => Effect.Effect<RenderedProposal, NotFound | InvalidState | DatabaseUnavailable>
  /**
   * A message a provider pushed (the `/hooks/{provider}` path): read back through the port on each
   * live connection of the account and recorded in those profiles' inboxes, once.
   */
  readonly ingestPushed: (provider: string, accountId: string, messageId: string) => Effect.Effect<void, DatabaseUnavailable>
  /**
   * A message the service sent outside a reply (`POST /api/v1/messages`), recorded in the copy in
   * the provider's conversation (the mail thread for email), so the person's answer lands in the
   * same conversation. Answers the conversation's id and the recorded message.
   */
  readonly recordOutbound: (
    profileId: string,
    channel: InboxChannel,
    conversation: { readonly id: string; readonly contactId: string; readonly subject: string | null },
    message: OutboundMessage
  ) => Effect.Effect<{ readonly conversationId: string; readonly message: RenderedMessage }, DatabaseUnavailable>
}>()("svc/Inbox") {
  static readonly layer = Layer.effect(Inbox)(
    Effect.gen(function*() {
      const repo = yield* InboxRepo
      const customers = yield* IdentityIntake
      const connections = yield* ConnectionSessions
      const healthcare = yield* HealthcareCheck
      const onConnection = yield* liveCaller
      const email = yield* Email
      const chatAppA = yield* ChatAppA
      const health = yield* ConnectionHealth
      const plain: Record<"social_dm" | "page_messenger" | "short_video_messaging", MessagingApi> = {
        social_dm: yield* SocialDm,
        page_messenger: yield* PageMessenger,
        short_video_messaging: yield* ShortVideoMessaging
      }
      const reads = (channel: Exclude<InboxChannel, "email">) => (channel === "chat_app_a" ? chatAppA : plain[channel])

      /** Records messages of one conversation and proposes what inbound text names, in one transaction. */
      const record = (
        profileId: string,
        channel: InboxChannel,
        conversation: { readonly id: string; readonly contactId: string; readonly contactName: string | null; readonly subject: string | null },
        messages: ReadonlyArray<NewMessage>
      ) =>
        repo.transaction(Effect.gen(function*() {
          const lastAt = messages.reduce((latest, m) => (m.sentAt > latest ? m.sentAt : latest), "1970-01-01T00:00:00.000Z")
          const conversationId = yield* repo.upsertConversation({
            profileId,
            channel,
            providerConversationId: conversation.id,
            contactId: conversation.contactId,
            contactName: conversation.contactName,
            subject: conversation.subject
          }, lastAt)
          const inserted = yield* repo.insertMessages(profileId, conversationId, messages)
          const proposals = inserted.flatMap((m) =>
            m.direction === "inbound" && m.body !== null ? extractIdentifiers(m.body).map((found) => ({ messageId: m.id, ...found })) : []
          )
          yield* repo.insertProposals(profileId, conversationId, proposals)
          return conversationId
        }))

      const chatMessage = (m: Message): NewMessage => ({
        providerMessageId: m.id,
        direction: m.direction,
        sender: m.from,
        body: m.text ?? (m.template === null ? null : `[template ${m.template.name}]`),
        rfc822MessageId: null,
        status: m.status,
        sentAt: new Date(m.created_at).toISOString()
      })

      const mailMessage = (m: MailMessage): NewMessage => ({
        providerMessageId: m.id,
        direction: m.direction,
        sender: m.from,
        body: m.text,
        rfc822MessageId: m.message_id_header,
        status: m.delivery_status,
        sentAt: new Date(m.created_at).toISOString()
      })

      /** The other party of a mail thread: the sender of its first inbound message, else the first recipient. */
      const mailContact = (messages: ReadonlyArray<MailMessage>) =>
        messages.find((m) => m.direction === "inbound")?.from ?? messages[0]?.to[0] ?? "unknown"

      const backfillChat = (profileId: string, channel: Exclude<InboxChannel, "email">, session: ProviderSession) => {
        const api = reads(channel)
        return Stream.runForEach(Stream.take(api.conversations(session), BACKFILL_CONVERSATIONS), (conversation) =>
          Effect.flatMap(Stream.runCollect(Stream.take(api.messages(session, conversation.id), BACKFILL_MESSAGES)), (messages) =>
            messages.length === 0 ? Effect.void : Effect.asVoid(record(profileId, channel, {
              id: conversation.id,
              contactId: conversation.contact_id,
              contactName: conversation.contact_name,
              subject: null
            }, Array.from(messages, chatMessage)))))
      }

      const backfillMail = (profileId: string, session: ProviderSession) =>
        Stream.runForEach(Stream.take(email.threads(session), BACKFILL_CONVERSATIONS), (thread) =>
          Effect.flatMap(Stream.runCollect(Stream.take(email.threadMessages(session, thread.id), BACKFILL_MESSAGES)), (collected) => {
            const messages = Array.from(collected)
            return messages.length === 0 ? Effect.void : Effect.asVoid(record(profileId, "email", {
              id: thread.id,
              contactId: mailContact(messages),
              contactName: null,
              subject: thread.subject
            }, messages.map(mailMessage)))
          }))

      /**
       * Refreshes the copy from every channel connected to the profile whose last backfill is stale.
       * A provider failure leaves the copy as it is (the read still answers it); the database's does not.
       */
      const backfill = (profileId: string) =>
        Effect.forEach(INBOX_CHANNELS, (channel) =>
          Effect.gen(function*() {
            const current = yield* connections.currentOf(profileId, channel)
            if (Option.isNone(current) || current.value.status !== "active") return
            if (!(yield* repo.claimBackfill(profileId, current.value.id, BACKFILL_EVERY_SECONDS))) return
            yield* onConnection(profileId, channel, { what: "The channel" }, (session) =>
              channel === "email" ? backfillMail(profileId, session) : backfillChat(profileId, channel, session)).pipe(
                Effect.catch((error) =>
                  error._tag === "DatabaseUnavailable"
                    ? Effect.fail(error)
                    : Effect.logWarning("inbox backfill failed; the copy is answered as it is", { channel, reason: error._tag })
                )
              )
          }), { discard: true })

      const owned = (profile: ProfileContext, id: string) =>
        Effect.flatMap(repo.find(profile.profileId, id), Option.match({
          onNone: () => Effect.fail(notFound(id)),
          onSome: Effect.succeed
        }))

      const current = (profile: ProfileContext, id: string) => Effect.map(owned(profile, id), renderConversation)

      const list = Effect.fn("Inbox.list")(function*(profile: ProfileContext, query: ConversationsQuery) {
        yield* healthcare.refuse(profile)
        yield* backfill(profile.profileId)
        const limit = query.limit ?? DEFAULT_LIMIT
        const rows = yield* repo.list(profile.profileId, {
          channel: query.channel,
          label: query.label?.trim()
        }, yield* keysetCursor(query.cursor), limit)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.last_message_at, id: row.id }))
        return { data: page.map(renderConversation), pagination }
      })

      const get = Effect.fn("Inbox.get")(function*(profile: ProfileContext, id: string) {
        yield* healthcare.refuse(profile)
        const row = yield* owned(profile, id)
        const messages = yield* repo.messages(row.id, CONVERSATION_MESSAGES)
        const drafts = yield* repo.drafts(row.id)
        return { ...renderConversation(row), messages: messages.map(renderMessage), drafts: drafts.map(renderDraft) }
      })

      /** Sends `text` on the conversation's channel; answers the provider's message id and, for mail, its Message-ID. */
      const send = (profile: ProfileContext, row: ConversationRow, text: string) => {
        const channel = row.channel
        if (channel === "email") {
          return Effect.flatMap(repo.lastInbound(row.id), (inbound) =>
            onConnection(profile.profileId, "email", { what: `Conversation ${row.id}`, authRevoked: mailboxAuthRevoked }, (session, connection) =>
              // The provider's verdict on the mailbox sets or clears the connection's health (decision 0092).
              health.observe(connection, email.send(session, {
                to: [row.contact_id],
                subject: replySubject(row.subject),
                text,
                threadId: row.provider_conversation_id,
                ...(Option.isSome(inbound) && inbound.value.rfc822_message_id !== null ? { inReplyTo: inbound.value.rfc822_message_id } : {})
              })).pipe(
                Effect.map((sent): Sent => ({ id: sent.id, sender: session.accountId, rfc822: sent.message_id_header })),
                Effect.catchTag("EmailSendRefused", (refused) => Effect.fail(mailboxRefusal(refused)))
              )))
        }
        return onConnection(profile.profileId, channel, { what: `Conversation ${row.id}` }, (session) =>
          channel === "chat_app_a"
            ? Effect.gen(function*() {
              const numbers = yield* chatAppA.phoneNumbers(session)
              const phone = numbers[0]
              if (phone === undefined) {
                return yield* new InvalidState({ message: "The chat account has no phone number to send from.", reason: "no_phone_number" })
              }
              const sent = yield* chatAppA.sendText(session, { phoneNumberId: phone.id, to: row.contact_id, text })
              const answer: Sent = { id: sent.id, sender: phone.id, rfc822: null }
              return answer
            })
            : Effect.map(plain[channel].sendText(session, { recipientId: row.contact_id, text }), (sent): Sent => ({
              id: sent.id,
              sender: session.accountId,
              rfc822: null
            })))
      }

      /** Records one sent message and reads it back (a push that came first recorded the same message). */
      const recordSent = (
        profileId: string,
        channel: InboxChannel,
        conversation: { readonly id: string; readonly contactId: string; readonly subject: string | null },
        message: OutboundMessage
      ) =>
        Effect.gen(function*() {
          const conversationId = yield* record(profileId, channel, { ...conversation, contactName: null }, [{
            providerMessageId: message.providerMessageId,
            direction: "outbound",
            sender: message.sender,
            body: message.text,
            rfc822MessageId: message.rfc822MessageId,
            status: "sent",
            sentAt: message.sentAt
          }])
          const mine = yield* repo.messageByProviderId(conversationId, message.providerMessageId)
          return Option.isNone(mine)
            ? yield* Effect.die("the sent message is not in the copy")
            : { conversationId, message: renderMessage(mine.value) }
        })

      const recordOutbound = Effect.fn("Inbox.recordOutbound")(recordSent)

      const reply = Effect.fn("Inbox.reply")(function*(profile: ProfileContext, id: string, body: ReplyBody) {
        const row = yield* owned(profile, id)
        const text = body.text.trim()
        const sent = yield* send(profile, row, text)
        const recorded = yield* recordSent(profile.profileId, row.channel, {
          id: row.provider_conversation_id,
          contactId: row.contact_id,
          subject: null
        }, { providerMessageId: sent.id, sender: sent.sender, text, rfc822MessageId: sent.rfc822, sentAt: new Date().toISOString() })
        return recorded.message
      })

      const draft = Effect.fn("Inbox.draft")(function*(profile: ProfileContext, id: string, body: DraftBody) {
        const row = yield* owned(profile, id)
        const text = body.text.trim()
        // The mailbox keeps drafts of its own; the chat channels have none, so the inbox keeps them.
        const providerDraftId = row.channel === "email"
          ? yield* onConnection(profile.profileId, "email", { what: `Conversation ${row.id}`, authRevoked: mailboxAuthRevoked }, (session) =>
            Effect.map(
              email.createDraft(session, { to: [row.contact_id], subject: replySubject(row.subject), text, threadId: row.provider_conversation_id }),
              (created) => created.id
            ))
          : null
        const saved = yield* repo.insertDraft({ profileId: profile.profileId, conversationId: row.id, body: text, providerDraftId })
        return renderDraft(saved)
      })

      const setLabels = Effect.fn("Inbox.setLabels")(function*(profile: ProfileContext, id: string, body: LabelsBody) {
        yield* owned(profile, id)
        const labels = [...new Set(body.labels.map((label) => label.trim()))]
        yield* repo.setLabels(profile.profileId, id, labels)
        return yield* current(profile, id)
      })

      const linkCustomer = Effect.fn("Inbox.linkCustomer")(function*(profile: ProfileContext, id: string, body: LinkCustomerBody) {
        yield* owned(profile, id)
        const customer = yield* customers.customerByKey(profile.profileId, body.customer_key)
        if (Option.isNone(customer)) {
          return yield* new CustomerNotFound({ message: `No customer of this profile has the customer_key "${body.customer_key}".` })
        }
        yield* repo.setCustomer(profile.profileId, id, customer.value)
        return yield* current(profile, id)
      })

      const unlinkCustomer = Effect.fn("Inbox.unlinkCustomer")(function*(profile: ProfileContext, id: string) {
        yield* owned(profile, id)
        yield* repo.setCustomer(profile.profileId, id, null)
        return yield* current(profile, id)
      })

      const proposals = Effect.fn("Inbox.proposals")(function*(profile: ProfileContext, id: string) {
        yield* healthcare.refuse(profile)
        const row = yield* owned(profile, id)
        return (yield* repo.proposals(row.id)).map(renderProposal)
      })

      const decide = Effect.fn("Inbox.decide")(function*(profile: ProfileContext, proposalId: string, body: DecideBody) {
        const wanted = body.decision === "approve" ? "approved" : "rejected"
        return yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.proposal(profile.profileId, proposalId, true)
          if (Option.isNone(found)) return yield* new NotFound({ message: `Extraction proposal ${proposalId} was not found.` })
          const proposal = found.value
          // The same decision again answers it unchanged: a retried call is safe.
          if (proposal.status === wanted) return renderProposal(proposal)
          if (proposal.status !== "pending") {
            return yield* new InvalidState({
              message: `The proposal was already ${proposal.status}; a decision is final.`,
              reason: "proposal_decided"
            })
          }
          if (wanted === "rejected") return renderProposal(yield* repo.decideProposal(proposal.id, "rejected", null))
          const conversation = yield* repo.find(profile.profileId, proposal.conversation_id)
          const linked = Option.flatMapNullishOr(conversation, (c) => c.customer_id)
          if (Option.isNone(linked)) {
            return yield* new InvalidState({
              message: "Link the conversation to a customer first (PUT /api/v1/conversations/{conversationId}/customer).",
              reason: "customer_not_linked"
            })
          }
          const survivor = yield* customers.attachIdentifier(profile.profileId, linked.value, proposal.identifier_type, proposal.value)
          if (Option.isNone(survivor)) {
            return yield* new InvalidState({ message: "The linked customer no longer exists; link another one.", reason: "customer_not_linked" })
          }
          return renderProposal(yield* repo.decideProposal(proposal.id, "approved", survivor.value))
        }))
      })

      const ingestPushed = Effect.fn("Inbox.ingestPushed")(function*(provider: string, accountId: string, messageId: string) {
        if (!isInboxChannel(provider)) return
        const live = yield* connections.liveForAccount(provider, accountId)
        for (const connection of live) {
          yield* onConnection(connection.profile_id, provider, { what: `Message ${messageId}` }, (session) =>
            provider === "email"
              ? Effect.flatMap(email.getMessage(session, messageId), (message) =>
                record(connection.profile_id, "email", {
                  id: message.thread_id,
                  contactId: message.direction === "inbound" ? message.from : (message.to[0] ?? "unknown"),
                  contactName: null,
                  subject: message.subject
                }, [mailMessage(message)]))
              : Effect.flatMap(reads(provider).getMessage(session, messageId), (message) =>
                record(connection.profile_id, provider, {
                  id: message.conversation_id,
                  contactId: message.direction === "inbound" ? message.from : message.to,
                  contactName: null,
                  subject: null
                }, [chatMessage(message)]))).pipe(
              Effect.catch((error) =>
                error._tag === "DatabaseUnavailable"
                  ? Effect.fail(error)
                  // The next backfill reads what a failed push read missed.
                  : Effect.logWarning("inbox push not recorded; the backfill will read it", { provider, reason: error._tag })
              )
            )
        }
      })

      return { list, get, reply, draft, setLabels, linkCustomer, unlinkCustomer, proposals, decide, ingestPushed, recordOutbound }
    })
  ).pipe(Layer.provide([InboxRepo.layer, IdentityIntake.layer, ConnectionSessions.layer, HealthcareCheck.layer, ConnectionHealth.layer]))
}
