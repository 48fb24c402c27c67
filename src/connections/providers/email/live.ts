/**
 * The mail provider over HTTP: `/v1/accounts/<mailbox>[/threads]`, `POST
 * /v1/accounts/<mailbox>/messages`, `/v1/threads/<id>/messages`, `/v1/messages/<id>`. A send the
 * provider refuses for the mailbox's standing becomes `EmailSendRefused` with the reason the
 * service answers.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import { ProviderEndpoints } from "../endpoints.ts"
import type { ProviderError, ProviderRefused } from "../errors.ts"
import { ProviderHttp } from "../http.ts"
import { apiPath as path, sessionCall, sessionPages } from "../session-http.ts"
import { EMAIL_REFUSALS, type EmailRefusal, Email, EmailSendRefused } from "./port.ts"

const MailboxWire = Schema.Struct({ id: Schema.String, address: Schema.String, name: Schema.String, state: Schema.String })

const ThreadWire = Schema.Struct({
  id: Schema.String,
  mailbox_id: Schema.String,
  subject: Schema.String,
  label_ids: Schema.Array(Schema.String),
  updated_at: Schema.String
})

const LabelWire = Schema.Struct({ id: Schema.String, name: Schema.String, type: Schema.Literals(["system", "user"]) })

const DraftWire = Schema.Struct({
  id: Schema.String,
  thread_id: Schema.NullOr(Schema.String),
  to: Schema.Array(Schema.String),
  subject: Schema.String,
  text: Schema.String,
  updated_at: Schema.String
})

const MailMessageWire = Schema.Struct({
  id: Schema.String,
  thread_id: Schema.String,
  mailbox_id: Schema.String,
  direction: Schema.Literals(["inbound", "outbound"]),
  message_id_header: Schema.String,
  in_reply_to: Schema.NullOr(Schema.String),
  from: Schema.String,
  to: Schema.Array(Schema.String),
  subject: Schema.String,
  text: Schema.String,
  content_type: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  delivery_status: Schema.Literals(["received", "sent", "delivered", "failed"]),
  created_at: Schema.String
})

const SentMailWire = Schema.Struct({ id: Schema.String, thread_id: Schema.String, message_id_header: Schema.String })


const isRefusal = (code: string): code is EmailRefusal => (EMAIL_REFUSALS as ReadonlyArray<string>).includes(code)

/** A send the provider refused for the mailbox's standing or the recipient, by reason. */
const refusals = <A, R>(effect: Effect.Effect<A, ProviderError, R>) =>
  effect.pipe(
    Effect.catchTag("ProviderRefused", (error): Effect.Effect<never, ProviderRefused | EmailSendRefused> =>
      isRefusal(error.code)
        ? Effect.fail(new EmailSendRefused({ reason: error.code, detail: error.detail, providerStatus: error.status, providerCode: error.code }))
        : Effect.fail(error))
  )

export const EmailAdapter = Layer.effect(Email)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  return {
    mailbox: (session) => sessionCall(http, session, "mailbox", MailboxWire, { method: "GET", path: path("accounts", session.accountId) }),
    threads: (session) => sessionPages(http, session, "threads", ThreadWire, path("accounts", session.accountId, "threads")),
    threadMessages: (session, threadId) => sessionPages(http, session, "threadMessages", MailMessageWire, path("threads", threadId, "messages")),
    getMessage: (session, messageId) => sessionCall(http, session, "getMessage", MailMessageWire, { method: "GET", path: path("messages", messageId) }),
    send: (session, mail) =>
      refusals(sessionCall(http, session, "send", SentMailWire, {
        method: "POST",
        path: path("accounts", session.accountId, "messages"),
        json: {
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          ...(mail.threadId === undefined ? {} : { thread_id: mail.threadId }),
          ...(mail.inReplyTo === undefined ? {} : { in_reply_to: mail.inReplyTo }),
          ...(mail.headers === undefined ? {} : { headers: mail.headers }),
          ...(mail.attachments === undefined || mail.attachments.length === 0 ? {} : {
            attachments: mail.attachments.map((a) => ({
              filename: a.filename,
              content_type: a.contentType,
              content_base64: Buffer.from(a.content).toString("base64")
            }))
          })
        },
        idempotent: false
      })),
    search: (session, query) =>
      sessionPages(http, session, "search", MailMessageWire, path("accounts", session.accountId, "search"), { q: query }),
    labels: (session) => Stream.runCollect(sessionPages(http, session, "labels", LabelWire, path("accounts", session.accountId, "labels"))),
    setThreadLabels: (session, threadId, change) =>
      sessionCall(http, session, "setThreadLabels", ThreadWire, {
        method: "POST",
        path: path("threads", threadId, "labels"),
        json: { add: change.add ?? [], remove: change.remove ?? [] }
      }),
    drafts: (session) => sessionPages(http, session, "drafts", DraftWire, path("accounts", session.accountId, "drafts")),
    createDraft: (session, draft) =>
      sessionCall(http, session, "createDraft", DraftWire, {
        method: "POST",
        path: path("accounts", session.accountId, "drafts"),
        json: {
          to: draft.to,
          subject: draft.subject,
          text: draft.text,
          ...(draft.threadId === undefined ? {} : { thread_id: draft.threadId })
        },
        idempotent: false
      }),
    sendDraft: (session, draftId) =>
      refusals(sessionCall(http, session, "sendDraft", SentMailWire, { method: "POST", path: path("drafts", draftId, "send"), json: {}, idempotent: false }))
  }
}))

export const EmailLayer = EmailAdapter.pipe(Layer.provide(ProviderHttp.layer), Layer.provide(ProviderEndpoints.layer))
