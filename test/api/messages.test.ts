/**
 * `POST /api/v1/messages` (decision 0092) over real HTTP against the mail and messaging sandboxes
 * the app serves: an email opening a thread with the RFC 8058 pair as the mailbox received it, a
 * continuation of the thread, the person's answer landing in the conversation the send opened,
 * Idempotency-Key replay, every mailbox refusal with the provider's fields, connection health set
 * by a refusal and cleared by the next accepted send (with its `channel.health.updated` outbox
 * rows, also through the inbox reply), a chat channel, bad input that sends nothing.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call } from "../support/app.ts"
import { bearer, channelProfile, connectChannel, narrowKey, sandbox } from "../support/channels.ts"
import { eventually } from "../support/eventually.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"

/** Sending needs the channel's own scope; the inbox reads and replies need the conversations pair. */
const SCOPES = ["conversations:read", "conversations:write", "email", "social_dm"]
const MAILBOX = "em_mbx_0001"

const tag = () => crypto.randomUUID().slice(0, 8)

interface SandboxMail {
  readonly id: string
  readonly thread_id: string
  readonly direction: string
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly text: string
  readonly in_reply_to: string | null
  readonly message_id_header: string
  readonly headers: Readonly<Record<string, string>>
}

/** The key's profile's mail sandbox world (decision 0109). */
const mailState = (key: string) =>
  Effect.map(sandbox(key, "email", "GET", "_state"), (state) => {
    assert.strictEqual(state.status, 200, state.text)
    return { messages: state.json.messages as ReadonlyArray<SandboxMail>, writes: state.json.write_count as number }
  })

const mailTo = (key: string, recipient: string) =>
  Effect.map(mailState(key), (state) => state.messages.filter((m) => m.direction === "outbound" && m.to.includes(recipient)))

const setMailbox = (key: string, state: string) =>
  Effect.flatMap(sandbox(key, "email", "PATCH", "_state", { objects: [{ id: MAILBOX, state }] }), (answer) =>
    Effect.sync(() => assert.isBelow(answer.status, 300, answer.text)))

/** Runs `effect` with the mailbox in `state`, and puts it back to `active` whatever happens. */
const withMailbox = <A, E, R>(key: string, state: string, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(setMailbox(key, state), () => Effect.ensuring(effect, Effect.ignore(setMailbox(key, "active"))))

const mailProfile = Effect.fn("test.mailProfile")(function*() {
  const { key, profile } = yield* channelProfile(SCOPES)
  const connection = yield* connectChannel(key, "email")
  return { key, profile, connection }
})

const send = (key: string, body: unknown, headers: Record<string, string> = {}) => call("/api/v1/messages", bearer(key, "POST", body, headers))

const healthEvents = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ payload: { type: string; data: Record<string, unknown> } }>`
      SELECT payload FROM outbox WHERE profile_id = ${profileId} AND topic = 'channel.health.updated' ORDER BY created_at, id`).pipe(
      Effect.map((rows) => rows.map((row) => (typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload) as { type: string; data: Record<string, unknown> }))
    )

const healthOf = (connectionId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ health: string; reason: string | null }>`SELECT health, reason FROM connection_health WHERE connection_id = ${connectionId}`)

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("messages", (it) => {
  it.effect("an email opens a thread with the RFC 8058 pair; a continuation and the person's answer stay in it", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* mailProfile()
      const to = `ana-${tag()}@customer.example`
      const opened = yield* send(key, {
        channel: "email",
        to,
        subject: "Your booking",
        text: "See you on Monday",
        list_unsubscribe: { url: "https://shop.example/unsubscribe?u=1", one_click: true }
      })
      assert.strictEqual(opened.status, 201, opened.text)
      const data = opened.json.data
      assert.strictEqual(data.channel, "email")
      assert.match(data.rfc822_message_id, /^<.+>$/)
      assert.isString(data.provider_message_id)
      assert.isString(data.thread_id)
      assert.deepStrictEqual(data.to, [to])

      const [received] = yield* mailTo(key, to)
      assert.isDefined(received)
      assert.strictEqual(received?.id, data.provider_message_id)
      assert.strictEqual(received?.thread_id, data.thread_id)
      assert.strictEqual(received?.message_id_header, data.rfc822_message_id)
      assert.strictEqual(received?.subject, "Your booking")
      assert.deepStrictEqual(received?.headers, {
        "List-Unsubscribe": "<https://shop.example/unsubscribe?u=1>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"
      })

      const continued = yield* send(key, { channel: "email", to, thread_id: data.thread_id, text: "Bring your card" })
      assert.strictEqual(continued.status, 201, continued.text)
      assert.strictEqual(continued.json.data.thread_id, data.thread_id)
      assert.strictEqual(continued.json.data.conversation_id, data.conversation_id)
      const both = yield* mailTo(key, to)
      assert.strictEqual(both.length, 2)
      assert.strictEqual(both[1]?.subject, "Re: Your booking")
      assert.strictEqual(both[1]?.in_reply_to, data.rfc822_message_id)
      assert.deepStrictEqual(both[1]?.headers, {}, "no unsubscribe pair unless asked")

      // The person answers in the thread: the push lands it in the conversation the send opened.
      const answered = yield* sandbox(key, "email", "PATCH", "_state", {
        arrive: { kind: "message", mailbox_id: MAILBOX, thread_id: data.thread_id, from: to, text: "Thanks, see you" }
      })
      assert.isBelow(answered.status, 300, answered.text)
      assert.strictEqual(answered.json.thread_id, data.thread_id)
      const detail = yield* eventually(
        call(`/api/v1/conversations/${data.conversation_id}`, bearer(key)),
        (answer) => answer.json.data?.messages?.length === 3,
        { within: "10 seconds", what: "the answer in the conversation the send opened" }
      )
      const conversation = detail.json.data
      assert.strictEqual(conversation.channel, "email")
      assert.strictEqual(conversation.provider_conversation_id, data.thread_id)
      assert.deepStrictEqual(
        conversation.messages.map((m: { direction: string; text: string }) => [m.direction, m.text]),
        [["outbound", "See you on Monday"], ["outbound", "Bring your card"], ["inbound", "Thanks, see you"]]
      )
      assert.strictEqual(conversation.messages[0].id, data.id)
      // Accepted sends on a healthy connection change no health and emit nothing.
      assert.deepStrictEqual(yield* healthEvents(profile.profileId), [])
    }))

  it.effect("a retry with the Idempotency-Key sends nothing twice; the key with another body is 409", () =>
    Effect.gen(function*() {
      const { key } = yield* mailProfile()
      const to = `ben-${tag()}@customer.example`
      const headers = { "idempotency-key": `send-${tag()}` }
      const body = { channel: "email", to, subject: "Receipt", text: "Thank you" }
      const first = yield* send(key, body, headers)
      assert.strictEqual(first.status, 201, first.text)
      const again = yield* send(key, body, headers)
      assert.strictEqual(again.status, 201, again.text)
      assert.deepStrictEqual(again.json, first.json)
      assert.strictEqual((yield* mailTo(key, to)).length, 1)
      const other = yield* send(key, { ...body, text: "Something else" }, headers)
      assert.strictEqual(other.status, 409, other.text)
      assert.strictEqual(other.json.error.code, "idempotency_key_conflict")
      assert.strictEqual((yield* mailTo(key, to)).length, 1)
    }))

  it.effect("bad input is 400 validation_error and sends nothing", () =>
    Effect.gen(function*() {
      const { key } = yield* mailProfile()
      const to = `cy-${tag()}@customer.example`
      const before = (yield* mailState(key)).writes
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ channel: "email", to, subject: "x", text: "y", list_unsubscribe: { url: "http://shop.example/u", one_click: true } }, "one_click"],
        [{ channel: "email", to, subject: "x", text: "y", list_unsubscribe: { url: "javascript:alert(1)" } }, "list_unsubscribe.url"],
        [{ channel: "email", to, text: "no subject" }, "subject"],
        [{ channel: "email", to: "not-an-address", subject: "x", text: "y" }, "to"],
        [{ channel: "email", to, subject: "x", text: "   " }, "text"],
        [{ channel: "fax", to, subject: "x", text: "y" }, "channel"],
        [{ channel: "social_dm", to: "sdm_person_1", subject: "x", text: "y" }, "subject"],
        [{ channel: "social_dm", to: ["a", "b"], text: "y" }, "to"]
      ]
      for (const [body, field] of cases) {
        const refused = yield* send(key, body)
        assert.strictEqual(refused.status, 400, `${JSON.stringify(body)}: ${refused.text}`)
        assert.strictEqual(refused.json.error.code, "validation_error")
        assert.include(refused.json.error.message, field)
      }
      assert.strictEqual((yield* mailState(key)).writes, before, "nothing reached the mailbox")

      const { key: unconnected } = yield* channelProfile(SCOPES)
      const none = yield* send(unconnected, { channel: "email", to, subject: "x", text: "y" })
      assert.strictEqual(none.status, 409, none.text)
      assert.strictEqual(none.json.error.code, "invalid_state")
      assert.strictEqual(none.json.error.reason, "email_connection_required")
    }))

  it.effect("refusals answer the spec's codes; health is set by a refusal and cleared by the next accepted send, with the events", () =>
    Effect.gen(function*() {
      const { connection, key, profile } = yield* mailProfile()
      const to = `dee-${tag()}@customer.example`
      const body = { channel: "email", to, subject: "Hello", text: "Hi" }

      const rejected = yield* send(key, { ...body, to: `zed-${tag()}@rejected.example` })
      assert.strictEqual(rejected.status, 422, rejected.text)
      assert.strictEqual(rejected.json.error.code, "recipient_rejected")
      assert.strictEqual(rejected.json.error.provider, "email")
      assert.strictEqual(rejected.json.error.provider_status, 400)
      assert.strictEqual(rejected.json.error.provider_code, "recipient_rejected")
      assert.isString(rejected.json.error.provider_message)
      assert.deepStrictEqual(yield* healthEvents(profile.profileId), [], "a rejected recipient says nothing about the mailbox")

      const expect = [
        ["suspended", 403, "account_suspended"],
        ["disabled", 403, "mailbox_disabled"],
        ["quota_exceeded", 429, "quota_exceeded"]
      ] as const
      for (const [state, status, code] of expect) {
        const refused = yield* withMailbox(key, state, send(key, body))
        assert.strictEqual(refused.status, status, refused.text)
        assert.strictEqual(refused.json.error.code, code)
        assert.strictEqual(refused.json.error.provider, "email")
        assert.strictEqual(refused.json.error.provider_status, 403)
        assert.strictEqual(refused.json.error.provider_code, code)
        assert.isString(refused.json.error.provider_message)
        assert.deepStrictEqual(yield* healthOf(connection.id), [{ health: "needs_action", reason: code }])
      }
      // The same refusal twice changes nothing and emits nothing more.
      const twice = yield* withMailbox(key, "quota_exceeded", send(key, body))
      assert.strictEqual(twice.status, 429, twice.text)
      assert.strictEqual((yield* mailTo(key, to)).length, 0, "nothing was sent")

      const accepted = yield* send(key, body)
      assert.strictEqual(accepted.status, 201, accepted.text)
      assert.deepStrictEqual(yield* healthOf(connection.id), [{ health: "ok", reason: null }])

      const events = yield* healthEvents(profile.profileId)
      assert.deepStrictEqual(
        events.map((e) => [e.type, e.data["provider"], e.data["connection_id"], e.data["previous_health"], e.data["health"], e.data["reason"]]),
        [
          ["channel.health.updated", "email", connection.id, "ok", "needs_action", "account_suspended"],
          ["channel.health.updated", "email", connection.id, "needs_action", "needs_action", "mailbox_disabled"],
          ["channel.health.updated", "email", connection.id, "needs_action", "needs_action", "quota_exceeded"],
          ["channel.health.updated", "email", connection.id, "needs_action", "ok", null]
        ]
      )
      assert.strictEqual(events[0]?.data["profile_id"], profile.profileId)
    }))

  it.effect("the inbox reply path sets and clears health the same way", () =>
    Effect.gen(function*() {
      const { connection, key, profile } = yield* mailProfile()
      const from = `eve-${tag()}@customer.example`
      const arrived = yield* sandbox(key, "email", "PATCH", "_state", { arrive: { kind: "message", mailbox_id: MAILBOX, from, subject: "Q", text: "Open?" } })
      assert.isBelow(arrived.status, 300, arrived.text)
      const list = yield* call("/api/v1/conversations?channel=email", bearer(key))
      const conversation = (list.json.data as ReadonlyArray<{ id: string; contact: { id: string } }>).find((c) => c.contact.id === from)
      assert.isDefined(conversation, list.text)
      const path = `/api/v1/conversations/${conversation?.id}/reply`
      const refused = yield* withMailbox(key, "disabled", call(path, bearer(key, "POST", { text: "Yes" })))
      assert.strictEqual(refused.status, 403, refused.text)
      assert.strictEqual(refused.json.error.code, "mailbox_disabled")
      assert.deepStrictEqual(yield* healthOf(connection.id), [{ health: "needs_action", reason: "mailbox_disabled" }])
      const replied = yield* call(path, bearer(key, "POST", { text: "Yes" }))
      assert.strictEqual(replied.status, 201, replied.text)
      const events = yield* healthEvents(profile.profileId)
      assert.deepStrictEqual(events.map((e) => e.data["health"]), ["needs_action", "ok"])
    }))

  it.effect("a dead grant is 403 auth_revoked with reconnect_required; health reconnect_required with its event", () =>
    Effect.gen(function*() {
      const { connection, key, profile } = yield* mailProfile()
      const dead = yield* withMailbox(key, "auth_revoked", send(key, { channel: "email", to: `fay-${tag()}@customer.example`, subject: "x", text: "y" }))
      assert.strictEqual(dead.status, 403, dead.text)
      assert.strictEqual(dead.json.error.code, "auth_revoked")
      assert.strictEqual(dead.json.error.reconnect_required, true)
      assert.strictEqual(dead.json.error.provider, "email")
      assert.deepStrictEqual(yield* healthOf(connection.id), [{ health: "reconnect_required", reason: "auth_revoked" }])
      const events = yield* healthEvents(profile.profileId)
      assert.deepStrictEqual(events.map((e) => [e.data["health"], e.data["reason"]]), [["reconnect_required", "auth_revoked"]])
    }))

  it.effect("a chat channel sends to the person by the platform's id and records it in the conversation; scopes", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(SCOPES)
      yield* connectChannel(key, "social_dm")
      const person = `sdm_person_${tag()}`
      const wrote = yield* sandbox(key, "social_dm", "PATCH", "_state", {
        arrive: { kind: "message", account_id: "sdm_acct_0001", from: person, name: "Lu", text: "Hello?" }
      })
      assert.isBelow(wrote.status, 300, wrote.text)
      const sent = yield* send(key, { channel: "social_dm", to: person, text: "Hello Lu" })
      assert.strictEqual(sent.status, 201, sent.text)
      assert.strictEqual(sent.json.data.channel, "social_dm")
      assert.strictEqual(sent.json.data.thread_id, wrote.json.conversation_id)
      assert.isNull(sent.json.data.rfc822_message_id)
      const detail = yield* call(`/api/v1/conversations/${sent.json.data.conversation_id}`, bearer(key))
      assert.strictEqual(detail.status, 200, detail.text)
      assert.include(detail.json.data.messages.map((m: { text: string }) => m.text), "Hello Lu")

      // The inbox's scopes do not send; another channel's scope does not either.
      for (const scopes of [["conversations:read", "conversations:write"], ["email"]]) {
        const other = yield* narrowKey(profile, scopes)
        const refused = yield* send(other, { channel: "social_dm", to: person, text: "x" })
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        // Without any channel scope the middleware refuses first, naming every channel scope (any one would pass it).
        if (scopes.includes("email")) assert.strictEqual(refused.json.error.reason, "missing_scope:social_dm")
        else assert.include(refused.json.error.reason.split(/[:,]/), "social_dm")
      }
      const only = yield* narrowKey(profile, ["social_dm"])
      assert.strictEqual((yield* send(only, { channel: "social_dm", to: person, text: "again" })).status, 201)
    }))
})
