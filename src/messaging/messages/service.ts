/**
 * `POST /api/v1/messages` (decision 0092): one message on the profile's connection of a channel.
 * Email opens a thread, or continues `thread_id` (answering its last message, `Re:` its subject
 * when none is given), with the RFC 8058 `List-Unsubscribe` pair when asked; a chat channel
 * writes to the person by the platform's id. The provider's verdict on a mail send sets or clears
 * the connection's health; every accepted send is recorded in the inbox copy in the provider's
 * thread or conversation, where the person's answer lands too.
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import { InvalidState, ValidationError } from "../../../schema/errors.ts"
import type { InboxChannel } from "../../../schema/inbox.ts"
import { isEmailAddress, type SendMessageBody } from "../../../schema/messages.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { ConnectionHealth } from "../../connections/health/service.ts"
import { liveCaller } from "../../connections/live-call.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { authRevoked as mailboxAuthRevoked } from "../email/service.ts"
import { Inbox, type InboxError, mailboxRefusal } from "../inbox/service.ts"
import { ChatAppA } from "../../connections/providers/chat-app-a/port.ts"
import { Email, type OutgoingMail } from "../../connections/providers/email/port.ts"
import { type MessagingApi, PageMessenger, ShortVideoMessaging, SocialDm } from "../../connections/providers/messaging/port.ts"

/** Messages of a thread read to find the one a continuation answers. */
const THREAD_MESSAGES = 200

const invalid = (field: string, problem: string) => new ValidationError({ message: `body.${field}: ${problem}` })

/** The RFC 8058 pair: `List-Unsubscribe` always, `List-Unsubscribe-Post` only for one-click. */
export const unsubscribeHeaders = (
  listUnsubscribe: NonNullable<SendMessageBody["list_unsubscribe"]>
): Effect.Effect<Readonly<Record<string, string>>, ValidationError> => {
  const url = listUnsubscribe.url.trim()
  const parsed = URL.canParse(url) ? new URL(url) : null
  if (listUnsubscribe.one_click === true && parsed?.protocol !== "https:") {
    return Effect.fail(invalid("list_unsubscribe.one_click", "one-click unsubscribe (RFC 8058) needs an https: url"))
  }
  if (parsed === null || (parsed.protocol !== "https:" && parsed.protocol !== "mailto:")) {
    return Effect.fail(invalid("list_unsubscribe.url", "must be an https: or mailto: URL"))
  }
  if (/[<>\s,]/u.test(url)) return Effect.fail(invalid("list_unsubscribe.url", "must not contain spaces, commas or angle brackets"))
  return Effect.succeed({
    "List-Unsubscribe": `<${url}>`,
    ...(listUnsubscribe.one_click === true ? { "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" } : {})
  })
}

const replySubject = (subject: string) => (/^re:/i.test(subject) ? subject : `Re: ${subject}`)

export interface SentAnswer {
  readonly id: string
  readonly channel: InboxChannel
  readonly conversation_id: string
  readonly thread_id: string
  readonly rfc822_message_id: string | null
  readonly provider_message_id: string
  readonly to: ReadonlyArray<string>
  readonly status: string
  readonly sent_at: string
}

export class Messages extends Context.Service<Messages, {
  readonly send: (profile: ProfileContext, body: SendMessageBody) => Effect.Effect<SentAnswer, InboxError | ValidationError>
}>()("svc/Messages") {
  static readonly layer = Layer.effect(Messages)(
    Effect.gen(function*() {
      const onConnection = yield* liveCaller
      const inbox = yield* Inbox
      const health = yield* ConnectionHealth
      const email = yield* Email
      const chatAppA = yield* ChatAppA
      const plain: Record<"social_dm" | "page_messenger" | "short_video_messaging", MessagingApi> = {
        social_dm: yield* SocialDm,
        page_messenger: yield* PageMessenger,
        short_video_messaging: yield* ShortVideoMessaging
      }

      const sendEmail = Effect.fn("Messages.sendEmail")(function*(profile: ProfileContext, body: SendMessageBody) {
        const to = (typeof body.to === "string" ? [body.to] : body.to).map((address) => address.trim().toLowerCase())
        const wrong = to.find((address) => !isEmailAddress(address))
        if (wrong !== undefined) return yield* invalid("to", `"${wrong.slice(0, 100)}" is not an email address`)
        if (body.subject === undefined && body.thread_id === undefined) return yield* invalid("subject", "required unless thread_id continues a thread")
        const headers = body.list_unsubscribe === undefined ? {} : yield* unsubscribeHeaders(body.list_unsubscribe)
        const text = body.text.trim()
        const what = body.thread_id === undefined ? "The mailbox" : `Thread ${body.thread_id}`
        const { sender, sent, subject } = yield* onConnection(
          profile.profileId,
          "email",
          { what, authRevoked: mailboxAuthRevoked },
          (session, connection) =>
            Effect.gen(function*() {
              // A continuation answers the thread's last message; an unknown thread is the provider's 404.
              const last = body.thread_id === undefined
                ? Option.none()
                : yield* Stream.runLast(Stream.take(email.threadMessages(session, body.thread_id), THREAD_MESSAGES))
              const subject = body.subject?.trim() ?? Option.match(last, { onNone: () => "", onSome: (m) => replySubject(m.subject) })
              const mail: OutgoingMail = {
                to,
                subject,
                text,
                ...(body.thread_id === undefined ? {} : { threadId: body.thread_id }),
                ...(Option.isSome(last) ? { inReplyTo: last.value.message_id_header } : {}),
                ...(Object.keys(headers).length === 0 ? {} : { headers })
              }
              const sent = yield* health.observe(connection, email.send(session, mail)).pipe(
                Effect.catchTag("EmailSendRefused", (refused) => Effect.fail(mailboxRefusal(refused)))
              )
              return { sender: session.accountId, sent, subject }
            })
        )
        const at = new Date().toISOString()
        const recorded = yield* inbox.recordOutbound(profile.profileId, "email", { id: sent.thread_id, contactId: to[0] ?? "unknown", subject }, {
          providerMessageId: sent.id,
          sender,
          text,
          rfc822MessageId: sent.message_id_header,
          sentAt: at
        })
        return {
          id: recorded.message.id,
          channel: "email" as const,
          conversation_id: recorded.conversationId,
          thread_id: sent.thread_id,
          rfc822_message_id: sent.message_id_header,
          provider_message_id: sent.id,
          to,
          status: recorded.message.status,
          sent_at: recorded.message.sent_at
        }
      })

      const sendChat = Effect.fn("Messages.sendChat")(function*(
        profile: ProfileContext,
        channel: Exclude<InboxChannel, "email">,
        body: SendMessageBody
      ) {
        if (typeof body.to !== "string") return yield* invalid("to", `one recipient id on ${channel}`)
        for (const field of ["subject", "thread_id", "list_unsubscribe"] as const) {
          if (body[field] !== undefined) return yield* invalid(field, `email only; not accepted on ${channel}`)
        }
        const to = body.to.trim()
        const text = body.text.trim()
        const { sender, sent } = yield* onConnection(profile.profileId, channel, { what: `Recipient ${to}` }, (session) =>
          channel === "chat_app_a"
            ? Effect.gen(function*() {
              const phone = (yield* chatAppA.phoneNumbers(session))[0]
              if (phone === undefined) {
                return yield* new InvalidState({ message: "The chat account has no phone number to send from.", reason: "no_phone_number" })
              }
              return { sender: phone.id, sent: yield* chatAppA.sendText(session, { phoneNumberId: phone.id, to, text }) }
            })
            : Effect.map(plain[channel].sendText(session, { recipientId: to, text }), (sent) => ({ sender: session.accountId, sent })))
        const recorded = yield* inbox.recordOutbound(profile.profileId, channel, { id: sent.conversation_id, contactId: to, subject: null }, {
          providerMessageId: sent.id,
          sender,
          text,
          rfc822MessageId: null,
          sentAt: new Date().toISOString()
        })
        return {
          id: recorded.message.id,
          channel,
          conversation_id: recorded.conversationId,
          thread_id: sent.conversation_id,
          rfc822_message_id: null,
          provider_message_id: sent.id,
          to: [to],
          status: recorded.message.status,
          sent_at: recorded.message.sent_at
        }
      })

      const send = Effect.fn("Messages.send")(function*(profile: ProfileContext, body: SendMessageBody) {
        const channel = body.channel
        return channel === "email" ? yield* sendEmail(profile, body) : yield* sendChat(profile, channel, body)
      })

      return { send }
    })
  ).pipe(Layer.provide([Inbox.layer, ConnectionHealth.layer, ConnectionSessions.layer]))
}
