/**
 * The connected mailbox (decision 0080): threads, a thread's messages, drafts, labels and search
 * read and written live through the `Email` port on the profile's `email` connection; the mail
 * provider is the source of truth, nothing is copied. A dead grant is 403 `auth_revoked` with
 * `reconnect_required: true` (the connection is marked once).
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import type { CreateEmailDraft, SearchQuery, ThreadsQuery } from "../../../schema/email.ts"
import { AuthRevoked, type InvalidParameter, NotFound } from "../../../schema/errors.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { type LiveCallError, liveCaller } from "../../connections/live-call.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { streamPage, type StreamPage } from "../../connections/stream-page.ts"
import { Email, type MailDraft, type MailLabel, type MailMessage, type MailThread } from "../../connections/providers/email/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"

const PROVIDER = "email"
const DEFAULT_LIMIT = 50

export const authRevoked = () =>
  new AuthRevoked({
    message: "The mailbox's grant was revoked: reconnect it through POST /api/v1/connections/email/handoff.",
    reconnect_required: true,
    provider: PROVIDER,
    provider_status: 401,
    provider_code: "invalid_token",
    provider_message: "The grant was revoked."
  })

export type EmailError = LiveCallError | AuthRevoked

const renderThread = (thread: MailThread) => ({
  id: thread.id,
  subject: thread.subject,
  label_ids: thread.label_ids,
  updated_at: thread.updated_at
})

export const renderMail = (message: MailMessage) => ({
  id: message.id,
  thread_id: message.thread_id,
  direction: message.direction,
  rfc822_message_id: message.message_id_header,
  in_reply_to: message.in_reply_to,
  from: message.from,
  to: message.to,
  subject: message.subject,
  text: message.text,
  delivery_status: message.delivery_status,
  created_at: message.created_at
})

export type RenderedThread = ReturnType<typeof renderThread>
export type RenderedMail = ReturnType<typeof renderMail>

const renderPage = <A, B>(page: StreamPage<A>, render: (item: A) => B): StreamPage<B> => ({
  data: page.data.map(render),
  pagination: page.pagination
})

export class Mailbox extends Context.Service<Mailbox, {
  readonly threads: (profile: ProfileContext, query: ThreadsQuery) => Effect.Effect<StreamPage<RenderedThread>, EmailError | InvalidParameter>
  readonly thread: (
    profile: ProfileContext,
    threadId: string
  ) => Effect.Effect<RenderedThread & { readonly messages: ReadonlyArray<RenderedMail> }, EmailError>
  readonly createDraft: (profile: ProfileContext, body: CreateEmailDraft) => Effect.Effect<MailDraft, EmailError>
  readonly labels: (profile: ProfileContext) => Effect.Effect<ReadonlyArray<MailLabel>, EmailError>
  readonly search: (profile: ProfileContext, query: SearchQuery) => Effect.Effect<StreamPage<RenderedMail>, EmailError | InvalidParameter>
}>()("svc/Mailbox") {
  static readonly layer = Layer.effect(Mailbox)(
    Effect.gen(function*() {
      const port = yield* Email
      const onConnection = yield* liveCaller
      const live = <A, F>(profile: ProfileContext, what: string, call: (session: ProviderSession) => Effect.Effect<A, ProviderError | F>) =>
        onConnection<A, F, AuthRevoked>(profile.profileId, PROVIDER, { what, authRevoked }, call)

      const threads = Effect.fn("Mailbox.threads")(function*(profile: ProfileContext, query: ThreadsQuery) {
        const label = query.label?.trim()
        const page = yield* live(profile, "The mailbox", (session) =>
          streamPage(
            label === undefined ? port.threads(session) : Stream.filter(port.threads(session), (t) => t.label_ids.includes(label)),
            query.limit ?? DEFAULT_LIMIT,
            query.cursor
          ))
        return renderPage(page, renderThread)
      })

      const thread = Effect.fn("Mailbox.thread")(function*(profile: ProfileContext, threadId: string) {
        const found = yield* live(profile, `Thread ${threadId}`, (session) =>
          Effect.all([
            Stream.runHead(Stream.filter(port.threads(session), (t) => t.id === threadId)),
            Stream.runCollect(port.threadMessages(session, threadId))
          ]))
        const [head, messages] = found
        if (Option.isNone(head)) return yield* new NotFound({ message: `Thread ${threadId} was not found.` })
        return { ...renderThread(head.value), messages: Array.from(messages, renderMail) }
      })

      const createDraft = Effect.fn("Mailbox.createDraft")(function*(profile: ProfileContext, body: CreateEmailDraft) {
        return yield* live(profile, `Thread ${body.thread_id ?? ""}`, (session) =>
          port.createDraft(session, {
            to: body.to.map((address) => address.trim()),
            subject: body.subject,
            text: body.text,
            ...(body.thread_id === undefined ? {} : { threadId: body.thread_id })
          }))
      })

      const labels = Effect.fn("Mailbox.labels")(function*(profile: ProfileContext) {
        return yield* live(profile, "The mailbox", (session) => port.labels(session))
      })

      const search = Effect.fn("Mailbox.search")(function*(profile: ProfileContext, query: SearchQuery) {
        const page = yield* live(profile, "The mailbox", (session) =>
          streamPage(port.search(session, query.q.trim()), query.limit ?? DEFAULT_LIMIT, query.cursor))
        return renderPage(page, renderMail)
      })

      return { threads, thread, createDraft, labels, search }
    })
  ).pipe(Layer.provide([ConnectionSessions.layer]))
}
