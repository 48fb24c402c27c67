/**
 * The mailbox routes (routes.tsv Email, decision 0080) over real HTTP against the mail sandbox
 * the app serves: connected through the real hand-off, threads, a thread, drafts, labels and
 * search read and written live at the provider; the `email` scope; 404 for a thread of another
 * mailbox; a dead grant is 403 `auth_revoked` with `reconnect_required` and the provider's fields;
 * bad input refused before the provider is called; the PII access log.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call } from "../support/app.ts"
import { bearer, channelProfile, connectChannel, narrowKey, piiRows, sandbox } from "../support/channels.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"

/** A message arriving in the key's profile's mail sandbox world (decision 0109). */
const arrive = (key: string, fields: Record<string, unknown>) =>
  Effect.map(sandbox(key, "email", "PATCH", "_state", { arrive: { kind: "message", ...fields } }), (answer) => {
    assert.isBelow(answer.status, 300, answer.text)
    return answer.json as { message_id: string; thread_id: string }
  })

const mailState = (key: string) =>
  Effect.map(sandbox(key, "email", "GET", "_state"), (state) => {
    assert.strictEqual(state.status, 200, state.text)
    return state.json
  })

const unique = () => `w${crypto.randomUUID().slice(0, 8)}`

interface Thread {
  readonly id: string
  readonly subject: string
  readonly label_ids: ReadonlyArray<string>
}

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("email", (it) => {
  it.effect("threads most recent first with labels, the label filter, paging; one thread with its messages; logged", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(["email"])
      const connection = yield* connectChannel(key, "email")
      assert.strictEqual(connection.provider_account_id, "em_mbx_0001")
      const word = unique()
      const arrived = yield* arrive(key, { mailbox_id: "em_mbx_0001", from: "ana@customer.example", subject: `Booking ${word}`, text: "Hello" })

      const listed = yield* call("/api/v1/email/threads", bearer(key))
      assert.strictEqual(listed.status, 200, listed.text)
      const threads: ReadonlyArray<Thread> = listed.json.data
      const newest = threads[0]
      assert.isDefined(newest, listed.text)
      assert.strictEqual(newest?.id, arrived.thread_id, "the newest activity first")
      assert.strictEqual(newest?.subject, `Booking ${word}`)
      assert.deepStrictEqual(newest?.label_ids, ["INBOX"])
      assert.hasAllKeys(threads[0], ["id", "subject", "label_ids", "updated_at"])

      const inbox = yield* call("/api/v1/email/threads?label=INBOX", bearer(key))
      assert.isTrue(inbox.json.data.some((t: Thread) => t.id === arrived.thread_id))
      const sent = yield* call("/api/v1/email/threads?label=SENT", bearer(key))
      assert.isFalse(sent.json.data.some((t: Thread) => t.id === arrived.thread_id))

      const first = yield* call("/api/v1/email/threads?limit=1", bearer(key))
      assert.strictEqual(first.json.data.length, 1)
      assert.isTrue(first.json.pagination.has_next, first.text)
      const second = yield* call(`/api/v1/email/threads?limit=1&cursor=${first.json.pagination.cursor}`, bearer(key))
      assert.strictEqual(second.status, 200, second.text)
      assert.notStrictEqual(second.json.data[0].id, first.json.data[0].id)

      const thread = yield* call(`/api/v1/email/threads/${arrived.thread_id}`, bearer(key))
      assert.strictEqual(thread.status, 200, thread.text)
      assert.strictEqual(thread.json.data.subject, `Booking ${word}`)
      assert.strictEqual(thread.json.data.messages.length, 1)
      const message = thread.json.data.messages[0]
      assert.strictEqual(message.id, arrived.message_id)
      assert.strictEqual(message.from, "ana@customer.example")
      assert.strictEqual(message.direction, "inbound")
      assert.match(message.rfc822_message_id, /^<.+@.+>$/)

      const rows = yield* piiRows(profile)
      assert.includeDeepMembers(rows.map((r) => [r.route, r.result]), [
        ["GET /api/v1/email/threads", "allowed"],
        ["GET /api/v1/email/threads/:threadId", "allowed"]
      ])
    }))

  it.effect("a thread of another mailbox, or none, is 404 not_found", () =>
    Effect.gen(function*() {
      const { key } = yield* channelProfile(["email"])
      yield* connectChannel(key, "email")
      const elsewhere = yield* arrive(key, { mailbox_id: "em_mbx_0002", from: "bo@customer.example", subject: "Not yours", text: "x" })
      for (const id of [elsewhere.thread_id, "em_thr_nope"]) {
        const missing = yield* call(`/api/v1/email/threads/${id}`, bearer(key))
        assert.strictEqual(missing.status, 404, missing.text)
        assert.strictEqual(missing.json.error.code, "not_found")
      }
      const foreignDraft = yield* call("/api/v1/email/drafts", bearer(key, "POST", { to: ["a@b.example"], subject: "s", text: "t", thread_id: elsewhere.thread_id }))
      assert.strictEqual(foreignDraft.status, 404, foreignDraft.text)
    }))

  it.effect("a draft is created at the provider (201) and sent nowhere; labels and search are the provider's", () =>
    Effect.gen(function*() {
      const { key } = yield* channelProfile(["email"])
      yield* connectChannel(key, "email")
      const word = unique()
      const arrived = yield* arrive(key, { mailbox_id: "em_mbx_0001", from: "cy@customer.example", subject: "Quote", text: `Need a quote ${word}` })
      const sentBefore = (yield* mailState(key)).messages.filter((m: { direction: string }) => m.direction === "outbound").length

      const created = yield* call("/api/v1/email/drafts", bearer(key, "POST", {
        to: ["cy@customer.example"],
        subject: "Re: Quote",
        text: "Here it is",
        thread_id: arrived.thread_id
      }))
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.json.data.thread_id, arrived.thread_id)
      const state = yield* mailState(key)
      assert.isTrue(state.drafts.some((d: { id: string }) => d.id === created.json.data.id), "the draft is the provider's")
      assert.strictEqual(state.messages.filter((m: { direction: string }) => m.direction === "outbound").length, sentBefore)

      const labels = yield* call("/api/v1/email/labels", bearer(key))
      assert.strictEqual(labels.status, 200, labels.text)
      assert.includeDeepMembers(labels.json.data, [
        { id: "INBOX", name: "INBOX", type: "system" },
        { id: "em_mbx_0001_leads", name: "Leads", type: "user" }
      ])

      const found = yield* call(`/api/v1/email/search?q=${word}`, bearer(key))
      assert.strictEqual(found.status, 200, found.text)
      assert.deepStrictEqual(found.json.data.map((m: { id: string }) => m.id), [arrived.message_id])
      const nothing = yield* call(`/api/v1/email/search?q=${unique()}`, bearer(key))
      assert.deepStrictEqual(nothing.json.data, [])
    }))

  it.effect("without the email scope every route is 403; without a mailbox 409; bad input 400 and nothing written", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(["email"])
      const none = yield* call("/api/v1/email/labels", bearer(key))
      assert.strictEqual(none.status, 409, none.text)
      assert.strictEqual(none.json.error.reason, "email_connection_required")
      yield* connectChannel(key, "email")
      const other = yield* narrowKey(profile, ["conversations:read", "conversations:write", "calendar"])
      for (
        const [method, path, body] of [
          ["GET", "/api/v1/email/threads", undefined],
          ["GET", "/api/v1/email/threads/em_thr_1", undefined],
          ["POST", "/api/v1/email/drafts", { to: ["a@b.example"], subject: "s", text: "t" }],
          ["GET", "/api/v1/email/labels", undefined],
          ["GET", "/api/v1/email/search?q=x", undefined]
        ] as const
      ) {
        const refused = yield* call(path, bearer(other, method, body))
        assert.strictEqual(refused.status, 403, `${method} ${path}: ${refused.text}`)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
      }
      const writes = (yield* mailState(key)).write_count
      for (
        const body of [
          { to: [], subject: "s", text: "t" },
          { to: ["not an address"], subject: "s", text: "t" },
          { to: ["a@b.example"], subject: " ", text: "t" },
          { to: ["a@b.example"], subject: "s" },
          { to: ["a@b.example"], subject: "s", text: "t", bcc: ["x@y.example"] }
        ]
      ) {
        const bad = yield* call("/api/v1/email/drafts", bearer(key, "POST", body))
        assert.strictEqual(bad.status, 400, `${JSON.stringify(body)}: ${bad.text}`)
        assert.strictEqual(bad.json.error.code, "validation_error")
      }
      for (const query of ["", "?q=", "?q=%20%20", "?q=x&limit=101"]) {
        const bad = yield* call(`/api/v1/email/search${query}`, bearer(key))
        assert.strictEqual(bad.status, 400, `${query}: ${bad.text}`)
      }
      const cursor = yield* call("/api/v1/email/threads?cursor=bm9wZQ", bearer(key))
      assert.strictEqual(cursor.status, 400, cursor.text)
      assert.strictEqual(cursor.json.error.code, "invalid_parameter")
      assert.strictEqual((yield* mailState(key)).write_count, writes)
    }))

  it.effect("a revoked grant is 403 auth_revoked with reconnect_required and the provider's fields; the connection is marked", () =>
    Effect.gen(function*() {
      const { key } = yield* channelProfile(["email"])
      const connection = yield* connectChannel(key, "email")
      assert.strictEqual(connection.provider_account_id, "em_mbx_0001")
      const revoked = yield* sandbox(key, "email", "PATCH", "_state", { objects: [{ id: "em_mbx_0001", state: "auth_revoked" }] })
      assert.isBelow(revoked.status, 300, revoked.text)
      const dead = yield* call("/api/v1/email/threads", bearer(key))
      assert.strictEqual(dead.status, 403, dead.text)
      assert.strictEqual(dead.json.error.code, "auth_revoked")
      assert.strictEqual(dead.json.error.reconnect_required, true)
      assert.strictEqual(dead.json.error.provider, "email")
      assert.strictEqual(dead.json.error.provider_status, 401)
      assert.isString(dead.json.error.provider_code)
      assert.isString(dead.json.error.provider_message)
      const listed = yield* call("/api/v1/connections", bearer(key))
      const marked = listed.json.data.find((c: { id: string }) => c.id === connection.id)
      assert.strictEqual(marked.status, "reconnect_required", listed.text)
      // Still refused without asking the provider again.
      const again = yield* call("/api/v1/email/labels", bearer(key))
      assert.strictEqual(again.status, 403, again.text)
      assert.strictEqual(again.json.error.code, "auth_revoked")

      // The mailbox revoked is this profile's world's (decision 0109): another profile's is untouched.
      const { key: otherKey } = yield* channelProfile(["email"])
      yield* connectChannel(otherKey, "email")
      const other = yield* call("/api/v1/email/threads", bearer(otherKey))
      assert.strictEqual(other.status, 200, other.text)
    }))
})
