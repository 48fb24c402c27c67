/**
 * The `email` sandbox over real HTTP through the Email port: seeded mailboxes and threads,
 * sending (new thread and reply), the refusals set per mailbox (`account_suspended`,
 * `mailbox_disabled`, `auth_revoked`, `quota_exceeded`, `recipient_rejected`), inbound mail and
 * an RFC 3464 delivery-status report pushed signed, the report read back by dsn.ts.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { parseDeliveryReport } from "../../src/connections/providers/email/dsn.ts"
import { EmailLayer } from "../../src/connections/providers/email/live.ts"
import { Email } from "../../src/connections/providers/email/port.ts"
import { ProviderOAuthLayer } from "../../src/connections/providers/oauth/live.ts"
import { ProviderOAuth } from "../../src/connections/providers/oauth/port.ts"
import { verifyCallback } from "../../src/connections/providers/signing.ts"
import { eventually } from "../support/eventually.ts"
import { callbackCatcher, LOOPBACK_CALLBACKS, sandboxControl, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { connectSandbox } from "../support/sandbox-kinds.ts"

const ports = Layer.merge(ProviderOAuthLayer, EmailLayer)

const patchState = (body: unknown) =>
  sandboxControl("email", "PATCH", "_state", body)

const mail = { to: ["ana@customer.example"], subject: "Your quote", text: "Here it is." }

layer(serveAppOnOwnPort({ providers: LOOPBACK_CALLBACKS }), { timeout: "90 seconds", excludeTestServices: true })("sandbox email", (it) => {
  it.effect("seeded mailbox and thread; sends a new thread and a reply in it", () =>
    Effect.gen(function*() {
      const email = yield* Email
      const { session } = yield* connectSandbox("email")
      const mailbox = yield* email.mailbox(session)
      assert.deepStrictEqual([mailbox.id, mailbox.address, mailbox.state], ["em_mbx_0001", "team1@sandbox-mail.example", "active"])
      const threads = yield* Stream.runCollect(email.threads(session))
      assert.strictEqual(threads.length, 1)
      const seeded = yield* Stream.runCollect(email.threadMessages(session, threads[0]?.id ?? ""))
      assert.deepStrictEqual(seeded.map((m) => m.direction), ["inbound", "outbound"])
      assert.strictEqual(seeded[1]?.in_reply_to, seeded[0]?.message_id_header)
      const sent = yield* email.send(session, mail)
      assert.notStrictEqual(sent.thread_id, threads[0]?.id)
      const reply = yield* email.send(session, { ...mail, subject: "Re: Your quote", threadId: sent.thread_id, inReplyTo: sent.message_id_header })
      assert.strictEqual(reply.thread_id, sent.thread_id)
      const message = yield* email.getMessage(session, reply.id)
      assert.deepStrictEqual([message.direction, message.delivery_status, message.in_reply_to], ["outbound", "sent", sent.message_id_header])
      const state = yield* sandboxControl("email", "GET", "_state")
      for (const key of ["mailboxes", "threads", "messages", "write_count"]) assert.property(state.json, key)
    }).pipe(Effect.provide(ports)))

  it.effect("labels, search, drafts and List-Unsubscribe headers", () =>
    Effect.gen(function*() {
      const email = yield* Email
      const { session } = yield* connectSandbox("email", "two_accounts", 1)
      assert.strictEqual(session.accountId, "em_mbx_0002")
      const labels = yield* email.labels(session)
      assert.deepStrictEqual(labels.map((l) => l.id), ["INBOX", "SENT", "IMPORTANT", "em_mbx_0002_leads"])
      const [thread] = yield* Stream.runCollect(email.threads(session))
      if (thread === undefined) return assert.fail("no seeded thread")
      assert.deepStrictEqual([...thread.label_ids], ["INBOX", "SENT"])
      const labelled = yield* email.setThreadLabels(session, thread.id, { add: ["em_mbx_0002_leads"], remove: ["INBOX"] })
      assert.deepStrictEqual([...labelled.label_ids], ["SENT", "em_mbx_0002_leads"])
      const foreign = yield* Effect.flip(email.setThreadLabels(session, thread.id, { add: ["em_mbx_0001_leads"] }))
      assert.strictEqual(foreign._tag === "ProviderRefused" ? foreign.status : foreign._tag, 404)

      const hits = yield* Stream.runCollect(email.search(session, "PREMIUM plan"))
      assert.deepStrictEqual(hits.map((m) => m.direction), ["inbound"])
      assert.strictEqual((yield* Stream.runCollect(email.search(session, "no-such-words"))).length, 0)

      const draft = yield* email.createDraft(session, { to: ["bo@customer.example"], subject: "Proposal", text: "Draft text", threadId: thread.id })
      assert.deepStrictEqual((yield* Stream.runCollect(email.drafts(session))).map((d) => d.id), [draft.id])
      const sent = yield* email.sendDraft(session, draft.id)
      assert.strictEqual(sent.thread_id, thread.id)
      assert.strictEqual((yield* Stream.runCollect(email.drafts(session))).length, 0)

      const unsubscribe = {
        "List-Unsubscribe": "<https://svc.example/u/abc>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"
      }
      const news = yield* email.send(session, { to: ["bo@customer.example"], subject: "News", text: "Hello", headers: unsubscribe })
      assert.deepStrictEqual((yield* email.getMessage(session, news.id)).headers, unsubscribe)
      const smuggled = yield* Effect.flip(email.send(session, { ...mail, headers: { Bcc: "spy@example.com" } }))
      assert.strictEqual(smuggled._tag === "ProviderRefused" ? smuggled.code : smuggled._tag, "invalid_parameter")
    }).pipe(Effect.provide(ports)))

  it.effect("each mailbox state refuses sends with its reason; a rejected domain too; back to active sends again", () =>
    Effect.gen(function*() {
      const email = yield* Email
      const { session } = yield* connectSandbox("email", "two_accounts", 1)
      const mailbox = session.accountId
      assert.strictEqual(mailbox, "em_mbx_0002")
      const before = (yield* sandboxControl("email", "GET", "_state")).json.write_count as number
      for (const [state, reason] of [
        ["suspended", "account_suspended"],
        ["disabled", "mailbox_disabled"],
        ["quota_exceeded", "quota_exceeded"],
        ["recipient_rejected", "recipient_rejected"]
      ] as const) {
        assert.strictEqual((yield* patchState({ objects: [{ id: mailbox, state }] })).status, 200)
        const refused = yield* Effect.flip(email.send(session, mail))
        assert.deepStrictEqual([refused._tag, refused._tag === "EmailSendRefused" ? refused.reason : null], ["EmailSendRefused", reason])
      }
      yield* patchState({ objects: [{ id: mailbox, state: "auth_revoked" }] })
      const revoked = yield* Effect.flip(email.send(session, mail))
      assert.strictEqual(revoked._tag, "ProviderAuthRevoked")
      yield* patchState({ objects: [{ id: mailbox, state: "active" }] })
      const bounced = yield* Effect.flip(email.send(session, { ...mail, to: ["x@rejected.example"] }))
      assert.strictEqual(bounced._tag === "EmailSendRefused" ? bounced.reason : bounced._tag, "recipient_rejected")
      yield* email.send(session, mail)
      assert.strictEqual((yield* sandboxControl("email", "GET", "_state")).json.write_count, before + 1)
      // A state the provider does not have is refused and changes nothing.
      assert.strictEqual((yield* patchState({ objects: [{ id: mailbox, state: "sleepy" }] })).status, 400)
      assert.strictEqual((yield* email.mailbox(session)).state, "active")
    }).pipe(Effect.provide(ports)))

  it.effect("inbound mail and a delivery-status report are pushed signed; the report is RFC 3464", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const email = yield* Email
      const receiver = yield* callbackCatcher
      const { session } = yield* connectSandbox("email")
      yield* oauth.subscribe(session, receiver.url)
      const secret = sandboxSecretOf("email")

      const sent = yield* email.send(session, { ...mail, to: ["gone@customer.example"] })
      const inbound = yield* patchState({
        arrive: { kind: "message", thread_id: sent.thread_id, from: "ana@customer.example", subject: "Re: Your quote", text: "Thanks!" }
      })
      assert.strictEqual(inbound.status, 200)
      yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 1, { what: "the inbound push", within: "5 seconds" })
      const first = receiver.received[0]
      if (first === undefined) return assert.fail("no push")
      assert.isTrue(verifyCallback("email", secret, first.headers, first.body))
      assert.isFalse(verifyCallback("email", "wrong-secret", first.headers, first.body))
      const reply = JSON.parse(first.body)
      assert.deepInclude(reply, { event: "message.received", mailbox_id: "em_mbx_0001" })
      assert.deepInclude(reply.message, { thread_id: sent.thread_id, in_reply_to: sent.message_id_header, body: "Thanks!" })

      const report = yield* patchState({
        arrive: { kind: "delivery_status", message_id: sent.id, status: "failed", diagnostic: "550 5.1.1 mailbox unavailable" }
      })
      assert.strictEqual(report.status, 200)
      yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 2, { what: "the report push", within: "5 seconds" })
      const second = receiver.received[1]
      if (second === undefined) return assert.fail("no report push")
      assert.isTrue(verifyCallback("email", secret, second.headers, second.body))
      const bounce = JSON.parse(second.body).message
      assert.match(bounce.content_type, /^multipart\/report; report-type=delivery-status; boundary=/)
      assert.include(bounce.body, "Content-Type: message/delivery-status")
      assert.deepStrictEqual(parseDeliveryReport(bounce.content_type, bounce.body), {
        originalMessageId: sent.message_id_header,
        recipient: "gone@customer.example",
        action: "failed",
        status: "5.1.1",
        diagnostic: "550 5.1.1 mailbox unavailable"
      })
      assert.strictEqual((yield* email.getMessage(session, sent.id)).delivery_status, "failed")
      // Ordinary mail is not a report.
      assert.isNull(parseDeliveryReport("text/plain", "Thanks!"))
    }).pipe(Effect.provide(ports), Effect.scoped))

  it.effect("bad arrivals are 400 or 404 and add nothing", () =>
    Effect.gen(function*() {
      const before = (yield* sandboxControl("email", "GET", "_state")).json.messages.length as number
      assert.strictEqual((yield* patchState({ arrive: { kind: "message", from: "not-an-address", text: "x" } })).status, 400)
      assert.strictEqual((yield* patchState({ arrive: { kind: "message", thread_id: "nosuch", from: "a@b.example", text: "x" } })).status, 404)
      assert.strictEqual((yield* patchState({ arrive: { kind: "delivery_status", message_id: "nosuch" } })).status, 404)
      assert.strictEqual((yield* sandboxControl("email", "GET", "_state")).json.messages.length, before)
    }))

  it.effect("a send answered 500 is sent again and lands once; a throttled read waits out Retry-After", () =>
    Effect.gen(function*() {
      const email = yield* Email
      const { session } = yield* connectSandbox("email")
      const faults = (body: unknown) => sandboxControl("email", "POST", "_faults", body)
      const before = (yield* sandboxControl("email", "GET", "_state")).json.write_count as number
      yield* faults({ fail_next: 1 })
      const sent = yield* email.send(session, { ...mail, subject: "Retried once" })
      assert.strictEqual((yield* sandboxControl("email", "GET", "_state")).json.write_count, before + 1)
      assert.strictEqual((yield* email.getMessage(session, sent.id)).subject, "Retried once")
      yield* faults({ throttle: 1 })
      assert.strictEqual((yield* email.mailbox(session)).id, "em_mbx_0001")
      const counters = (yield* sandboxControl("email", "GET", "_state")).json.counters
      assert.isAtLeast(counters.faulted, 2)
    }).pipe(Effect.provide(ports)))

  // Last: revoking kills every grant of this sandbox.
  it.effect("a grant death pushes a signed grant_revoked and the port answers ProviderAuthRevoked", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const email = yield* Email
      const receiver = yield* callbackCatcher
      const { session } = yield* connectSandbox("email")
      yield* oauth.subscribe(session, receiver.url)
      const faults = yield* sandboxControl("email", "POST", "_faults", { revoke_tokens: true })
      assert.strictEqual(faults.status, 200)
      yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 1, { what: "the grant-death push", within: "5 seconds" })
      const push = receiver.received[0]
      if (push === undefined) return assert.fail("no push")
      assert.isTrue(verifyCallback("email", sandboxSecretOf("email"), push.headers, push.body))
      assert.deepInclude(JSON.parse(push.body), { event: "grant_revoked", account_id: "em_mbx_0001" })
      assert.strictEqual((yield* Effect.flip(email.mailbox(session)))._tag, "ProviderAuthRevoked")
      yield* sandboxControl("email", "POST", "_faults", { revoke_tokens: false })
    }).pipe(Effect.provide(ports), Effect.scoped))
})
