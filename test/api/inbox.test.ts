/**
 * The unified inbox (routes.tsv Inbox, decision 0079) over real HTTP against the messaging and
 * mail sandboxes the app serves: conversations of several channels in one list (the copy fed by a
 * backfill through the ports), replies through each channel's provider (with Idempotency-Key
 * replay and the mailbox refusals), drafts, labels, linking a customer, extraction proposals
 * approved (the identifier lands on the customer) or rejected (nothing), scopes, 404 for another
 * profile's ids, bad input, the PII access log.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call } from "../support/app.ts"
import { bearer, channelProfile, connectChannel, narrowKey, piiRows, sandbox } from "../support/channels.ts"
import { eventually } from "../support/eventually.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"

const SCOPES = ["conversations:read", "conversations:write"]

interface Conversation {
  readonly id: string
  readonly channel: string
  readonly provider_conversation_id: string
  readonly contact: { readonly id: string; readonly name: string | null }
  readonly labels: ReadonlyArray<string>
  readonly customer_key: string | null
  readonly customer_linked: boolean
  readonly pending_proposals: number
}

interface Proposal {
  readonly id: string
  readonly identifier_type: string
  readonly value: string
  readonly status: string
}

const tag = () => crypto.randomUUID().slice(0, 8)

/** A direct message arriving in the key's profile's sandbox world (decision 0109). */
const dmArrives = (key: string, from: string, text: string, name = "Lu") =>
  Effect.map(
    sandbox(key, "social_dm", "PATCH", "_state", { arrive: { kind: "message", account_id: "sdm_acct_0001", from, name, text } }),
    (answer) => {
      assert.isBelow(answer.status, 300, answer.text)
      return answer.json as { message_id: string; conversation_id: string }
    }
  )

const mailArrives = (key: string, from: string, subject: string, text: string) =>
  Effect.map(
    sandbox(key, "email", "PATCH", "_state", { arrive: { kind: "message", mailbox_id: "em_mbx_0001", from, subject, text } }),
    (answer) => {
      assert.isBelow(answer.status, 300, answer.text)
      return answer.json as { message_id: string; thread_id: string }
    }
  )

const conversations = (key: string, query = "") =>
  Effect.map(call(`/api/v1/conversations${query}`, bearer(key)), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.json.data as ReadonlyArray<Conversation>
  })

const findBy = (list: ReadonlyArray<Conversation>, contactId: string) => {
  const found = list.find((c) => c.contact.id === contactId)
  assert.isDefined(found, `no conversation with ${contactId}`)
  return found as Conversation
}

/** A profile connected to the first social_dm account and the first mailbox. */
const inboxProfile = Effect.fn("test.inboxProfile")(function*() {
  const { key, profile } = yield* channelProfile(SCOPES)
  yield* connectChannel(key, "social_dm")
  yield* connectChannel(key, "email")
  return { key, profile }
})

/** What the key's profile's sandbox world of `provider` sent to `recipient` (decision 0109). */
const outboundTo = (key: string, provider: string, recipient: string) =>
  Effect.map(sandbox(key, provider, "GET", "_state"), (state) => {
    assert.strictEqual(state.status, 200, state.text)
    return (state.json.messages as ReadonlyArray<{ direction: string; to: string | ReadonlyArray<string>; text: string; thread_id?: string; in_reply_to?: string | null }>)
      .filter((m) => m.direction === "outbound" && (Array.isArray(m.to) ? m.to.includes(recipient) : m.to === recipient))
  })

const seedCustomer = (profileId: string, customerKey: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${crypto.randomUUID()}, ${profileId}, ${customerKey})`)

const identifiersOf = (profileId: string, customerKey: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ kind: string; value: string }>`
      SELECT i.kind, i.value FROM customer_identifiers i JOIN customers c ON c.id = i.customer_id
      WHERE c.profile_id = ${profileId} AND c.customer_key = ${customerKey} AND i.removed_at IS NULL ORDER BY i.kind`)

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("inbox", (it) => {
  it.effect("one list across channels, newest first, filtered by channel; a conversation with its messages; logged", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* inboxProfile()
      const dmContact = `sdm_person_${tag()}`
      yield* dmArrives(key, dmContact, "Hi, I saw your ad")
      const mailFrom = `mia-${tag()}@customer.example`
      const mail = yield* mailArrives(key, mailFrom, "Opening hours", "When are you open?")

      const all = yield* conversations(key)
      const dm = findBy(all, dmContact)
      const thread = findBy(all, mailFrom)
      assert.strictEqual(dm.channel, "social_dm")
      assert.strictEqual(dm.contact.name, "Lu")
      assert.strictEqual(thread.channel, "email")
      assert.strictEqual(thread.provider_conversation_id, mail.thread_id)
      assert.strictEqual(all[0]?.id, thread.id, "the newest activity first")
      assert.isFalse(dm.customer_linked)

      const onlyDm = yield* conversations(key, "?channel=social_dm")
      assert.isTrue(onlyDm.every((c) => c.channel === "social_dm"))
      assert.isTrue(onlyDm.some((c) => c.id === dm.id))

      const page = yield* call("/api/v1/conversations?limit=1", bearer(key))
      assert.strictEqual(page.json.data.length, 1)
      assert.isTrue(page.json.pagination.has_next)
      const next = yield* call(`/api/v1/conversations?limit=1&cursor=${page.json.pagination.cursor}`, bearer(key))
      assert.notStrictEqual(next.json.data[0].id, page.json.data[0].id)

      const detail = yield* call(`/api/v1/conversations/${dm.id}`, bearer(key))
      assert.strictEqual(detail.status, 200, detail.text)
      const messages: ReadonlyArray<{ direction: string; text: string; sender: string }> = detail.json.data.messages
      assert.deepStrictEqual(messages.map((m) => [m.direction, m.sender, m.text]), [["inbound", dmContact, "Hi, I saw your ad"]])
      assert.deepStrictEqual(detail.json.data.drafts, [])

      const rows = yield* piiRows(profile)
      assert.includeDeepMembers(rows.map((r) => [r.route, r.result]), [
        ["GET /api/v1/conversations", "allowed"],
        ["GET /api/v1/conversations/:conversationId", "allowed"]
      ])
    }))

  it.effect("a message pushed after the list was read shows at once (the push, not the next backfill); chat_app_a replies from its number", () =>
    Effect.gen(function*() {
      const { key } = yield* inboxProfile()
      yield* connectChannel(key, "chat_app_a")
      yield* conversations(key)
      const dmContact = `sdm_person_${tag()}`
      yield* dmArrives(key, dmContact, "Pushed: are you open?")
      const mailFrom = `pia-${tag()}@customer.example`
      yield* mailArrives(key, mailFrom, "Pushed", "Pushed mail")
      const waId = `3460${Math.floor(1_000_000 + Math.random() * 8_999_999)}`
      const chat = yield* sandbox(key, "chat_app_a", "PATCH", "_state", { arrive: { kind: "message", from: waId, name: "Rui", text: "Pushed chat" } })
      assert.isBelow(chat.status, 300, chat.text)

      const seen = yield* eventually(
        conversations(key),
        (list) => [dmContact, mailFrom, waId].every((id) => list.some((c) => c.contact.id === id)),
        { what: "the pushed messages in the inbox", within: "10 seconds" }
      )
      const whatsapp = findBy(seen, waId)
      assert.strictEqual(whatsapp.channel, "chat_app_a")
      assert.strictEqual(findBy(seen, mailFrom).channel, "email")

      const replied = yield* call(`/api/v1/conversations/${whatsapp.id}/reply`, bearer(key, "POST", { text: "Yes, until 8" }))
      assert.strictEqual(replied.status, 201, replied.text)
      assert.strictEqual(replied.json.data.sender, "ca_phone_0001")
      assert.deepStrictEqual((yield* outboundTo(key, "chat_app_a", waId)).map((m) => m.text), ["Yes, until 8"])
    }))

  it.effect("replies through the channel's provider and records them; a retry with the Idempotency-Key sends nothing twice", () =>
    Effect.gen(function*() {
      const { key } = yield* inboxProfile()
      const dmContact = `sdm_person_${tag()}`
      yield* dmArrives(key, dmContact, "Do you deliver?")
      const mailFrom = `noa-${tag()}@customer.example`
      const mail = yield* mailArrives(key, mailFrom, "Invoice", "Please send the invoice")
      const all = yield* conversations(key)
      const dm = findBy(all, dmContact)
      const thread = findBy(all, mailFrom)

      const headers = { "idempotency-key": `reply-${tag()}` }
      const replied = yield* call(`/api/v1/conversations/${dm.id}/reply`, bearer(key, "POST", { text: "Yes, every day" }, headers))
      assert.strictEqual(replied.status, 201, replied.text)
      assert.strictEqual(replied.json.data.direction, "outbound")
      assert.strictEqual(replied.json.data.text, "Yes, every day")
      const retried = yield* call(`/api/v1/conversations/${dm.id}/reply`, bearer(key, "POST", { text: "Yes, every day" }, headers))
      assert.strictEqual(retried.status, 201, retried.text)
      assert.strictEqual(retried.json.data.id, replied.json.data.id)
      const sent = yield* outboundTo(key, "social_dm", dmContact)
      assert.deepStrictEqual(sent.map((m) => m.text), ["Yes, every day"])
      assert.strictEqual(sent.length, 1)
      const detail = yield* call(`/api/v1/conversations/${dm.id}`, bearer(key))
      assert.deepStrictEqual(detail.json.data.messages.map((m: { direction: string }) => m.direction), ["inbound", "outbound"])

      const mailed = yield* call(`/api/v1/conversations/${thread.id}/reply`, bearer(key, "POST", { text: "Attached" }))
      assert.strictEqual(mailed.status, 201, mailed.text)
      assert.match(mailed.json.data.rfc822_message_id, /^<.+>$/)
      const out = yield* outboundTo(key, "email", mailFrom)
      assert.strictEqual(out.length, 1)
      assert.strictEqual(out[0]?.thread_id, mail.thread_id, "the reply is in the thread")
      const inbound = yield* call(`/api/v1/conversations/${thread.id}`, bearer(key))
      assert.strictEqual(out[0]?.in_reply_to, inbound.json.data.messages[0].rfc822_message_id)
    }))

  it.effect("mailbox refusals answer the spec's codes with the provider's fields and record nothing", () =>
    Effect.gen(function*() {
      const { key } = yield* inboxProfile()
      const rejected = `zed-${tag()}@rejected.example`
      yield* mailArrives(key, rejected, "Hello", "Hi")
      const fine = `ola-${tag()}@customer.example`
      yield* mailArrives(key, fine, "Hello", "Hi")
      const all = yield* conversations(key)

      const refused = yield* call(`/api/v1/conversations/${findBy(all, rejected).id}/reply`, bearer(key, "POST", { text: "x" }))
      assert.strictEqual(refused.status, 422, refused.text)
      assert.strictEqual(refused.json.error.code, "recipient_rejected")
      assert.strictEqual(refused.json.error.provider, "email")
      assert.strictEqual(refused.json.error.provider_status, 400)
      assert.strictEqual(refused.json.error.provider_code, "recipient_rejected")
      assert.isString(refused.json.error.provider_message)

      yield* sandbox(key, "email", "PATCH", "_state", { objects: [{ id: "em_mbx_0001", state: "suspended" }] })
      const suspended = yield* call(`/api/v1/conversations/${findBy(all, fine).id}/reply`, bearer(key, "POST", { text: "x" })).pipe(
        Effect.ensuring(Effect.ignore(sandbox(key, "email", "PATCH", "_state", { objects: [{ id: "em_mbx_0001", state: "active" }] })))
      )
      assert.strictEqual(suspended.status, 403, suspended.text)
      assert.strictEqual(suspended.json.error.code, "account_suspended")
      assert.strictEqual(suspended.json.error.provider_status, 403)
      const detail = yield* call(`/api/v1/conversations/${findBy(all, fine).id}`, bearer(key))
      assert.deepStrictEqual(detail.json.data.messages.map((m: { direction: string }) => m.direction), ["inbound"])
    }))

  it.effect("drafts (an email one in the mailbox too) and labels", () =>
    Effect.gen(function*() {
      const { key } = yield* inboxProfile()
      const dmContact = `sdm_person_${tag()}`
      yield* dmArrives(key, dmContact, "Price?")
      const mailFrom = `ivy-${tag()}@customer.example`
      yield* mailArrives(key, mailFrom, "Price", "Price?")
      const all = yield* conversations(key)
      const dm = findBy(all, dmContact)

      const chatDraft = yield* call(`/api/v1/conversations/${dm.id}/drafts`, bearer(key, "POST", { text: "It is 20" }))
      assert.strictEqual(chatDraft.status, 201, chatDraft.text)
      assert.isNull(chatDraft.json.data.provider_draft_id)
      const mailDraft = yield* call(`/api/v1/conversations/${findBy(all, mailFrom).id}/drafts`, bearer(key, "POST", { text: "It is 20" }))
      assert.strictEqual(mailDraft.status, 201, mailDraft.text)
      const state = yield* sandbox(key, "email", "GET", "_state")
      assert.isTrue(state.json.drafts.some((d: { id: string; to: ReadonlyArray<string> }) =>
        d.id === mailDraft.json.data.provider_draft_id && d.to.includes(mailFrom)
      ))
      assert.deepStrictEqual(yield* outboundTo(key, "social_dm", dmContact), [], "a draft sends nothing")
      const detail = yield* call(`/api/v1/conversations/${dm.id}`, bearer(key))
      assert.deepStrictEqual(detail.json.data.drafts.map((d: { text: string }) => d.text), ["It is 20"])

      const labelled = yield* call(`/api/v1/conversations/${dm.id}/labels`, bearer(key, "PUT", { labels: ["vip", "follow up", "vip"] }))
      assert.strictEqual(labelled.status, 200, labelled.text)
      assert.deepStrictEqual(labelled.json.data.labels, ["vip", "follow up"])
      const vip = yield* conversations(key, "?label=vip")
      assert.deepStrictEqual(vip.map((c) => c.id), [dm.id])
      for (const labels of [["bad\nlabel"], [""], Array.from({ length: 21 }, (_, i) => `l${i}`)]) {
        const bad = yield* call(`/api/v1/conversations/${dm.id}/labels`, bearer(key, "PUT", { labels }))
        assert.strictEqual(bad.status, 400, bad.text)
        assert.strictEqual(bad.json.error.code, "validation_error")
      }
      const cleared = yield* call(`/api/v1/conversations/${dm.id}/labels`, bearer(key, "PUT", { labels: [] }))
      assert.deepStrictEqual(cleared.json.data.labels, [])
    }))

  it.effect("extraction proposals: approve attaches the identifier to the linked customer, reject attaches nothing; decisions are final", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* inboxProfile()
      const dmContact = `sdm_person_${tag()}`
      yield* dmArrives(key, dmContact, "my email is Lu.Perez@Example.com and my phone is +34 600 111 222, order 1001")
      const dm = findBy(yield* conversations(key), dmContact)
      assert.strictEqual(dm.pending_proposals, 2)
      const listed = yield* call(`/api/v1/conversations/${dm.id}/extraction-proposals`, bearer(key))
      assert.strictEqual(listed.status, 200, listed.text)
      const proposals: ReadonlyArray<Proposal> = listed.json.data
      assert.deepStrictEqual(proposals.map((p) => [p.identifier_type, p.value, p.status]), [
        ["email", "lu.perez@example.com", "pending"],
        ["phone", "+34600111222", "pending"]
      ])
      const [emailProposal, phoneProposal] = proposals as [Proposal, Proposal]
      const decide = (id: string, decision: string) =>
        call(`/api/v1/conversations/extraction-proposals/${id}/decide`, bearer(key, "POST", { decision }))

      const unlinked = yield* decide(emailProposal.id, "approve")
      assert.strictEqual(unlinked.status, 409, unlinked.text)
      assert.strictEqual(unlinked.json.error.reason, "customer_not_linked")

      const unknown = yield* call(`/api/v1/conversations/${dm.id}/customer`, bearer(key, "PUT", { customer_key: `nobody-${tag()}` }))
      assert.strictEqual(unknown.status, 404, unknown.text)
      assert.strictEqual(unknown.json.error.code, "customer_not_found")
      const customerKey = `cust-${tag()}`
      yield* seedCustomer(profile.profileId, customerKey)
      const linked = yield* call(`/api/v1/conversations/${dm.id}/customer`, bearer(key, "PUT", { customer_key: customerKey }))
      assert.strictEqual(linked.status, 200, linked.text)
      assert.strictEqual(linked.json.data.customer_key, customerKey)
      assert.isTrue(linked.json.data.customer_linked)

      const approved = yield* decide(emailProposal.id, "approve")
      assert.strictEqual(approved.status, 200, approved.text)
      assert.strictEqual(approved.json.data.status, "approved")
      const rejected = yield* decide(phoneProposal.id, "reject")
      assert.strictEqual(rejected.json.data.status, "rejected")
      assert.deepStrictEqual(yield* identifiersOf(profile.profileId, customerKey), [{ kind: "email", value: "lu.perez@example.com" }])

      const repeated = yield* decide(emailProposal.id, "approve")
      assert.strictEqual(repeated.status, 200, repeated.text)
      const flipped = yield* decide(phoneProposal.id, "approve")
      assert.strictEqual(flipped.status, 409, flipped.text)
      assert.strictEqual(flipped.json.error.reason, "proposal_decided")
      assert.deepStrictEqual(yield* identifiersOf(profile.profileId, customerKey), [{ kind: "email", value: "lu.perez@example.com" }])

      const bad = yield* decide(phoneProposal.id, "maybe")
      assert.strictEqual(bad.status, 400, bad.text)

      const unlinkedNow = yield* call(`/api/v1/conversations/${dm.id}/customer`, bearer(key, "DELETE"))
      assert.strictEqual(unlinkedNow.status, 200, unlinkedNow.text)
      assert.isFalse(unlinkedNow.json.data.customer_linked)
      assert.isNull(unlinkedNow.json.data.customer_key)
    }))

  it.effect("another profile's ids are 404; scopes are enforced (403) and change nothing", () =>
    Effect.gen(function*() {
      const owner = yield* inboxProfile()
      const dmContact = `sdm_person_${tag()}`
      yield* dmArrives(owner.key, dmContact, "write to me at someone@example.org")
      const dm = findBy(yield* conversations(owner.key), dmContact)
      const proposal = (yield* call(`/api/v1/conversations/${dm.id}/extraction-proposals`, bearer(owner.key))).json.data[0] as Proposal

      const stranger = yield* inboxProfile()
      for (
        const [method, path, body] of [
          ["GET", `/api/v1/conversations/${dm.id}`, undefined],
          ["GET", `/api/v1/conversations/${dm.id}/extraction-proposals`, undefined],
          ["POST", `/api/v1/conversations/${dm.id}/reply`, { text: "x" }],
          ["POST", `/api/v1/conversations/${dm.id}/drafts`, { text: "x" }],
          ["PUT", `/api/v1/conversations/${dm.id}/labels`, { labels: ["x"] }],
          ["DELETE", `/api/v1/conversations/${dm.id}/customer`, undefined],
          ["POST", `/api/v1/conversations/extraction-proposals/${proposal.id}/decide`, { decision: "reject" }],
          ["GET", `/api/v1/conversations/${crypto.randomUUID()}`, undefined]
        ] as const
      ) {
        const missing = yield* call(path, bearer(stranger.key, method, body))
        assert.strictEqual(missing.status, 404, `${method} ${path}: ${missing.text}`)
        assert.strictEqual(missing.json.error.code, "not_found")
      }
      const malformed = yield* call("/api/v1/conversations/not-a-uuid", bearer(owner.key))
      assert.strictEqual(malformed.status, 400, malformed.text)

      const reader = yield* narrowKey(owner.profile, ["conversations:read"])
      const neither = yield* narrowKey(owner.profile, ["email", "chat_app_a", "social_dm"])
      const writes = [
        ["POST", `/api/v1/conversations/${dm.id}/reply`, { text: "x" }],
        ["POST", `/api/v1/conversations/${dm.id}/drafts`, { text: "x" }],
        ["PUT", `/api/v1/conversations/${dm.id}/labels`, { labels: ["x"] }],
        ["PUT", `/api/v1/conversations/${dm.id}/customer`, { customer_key: "k" }],
        ["DELETE", `/api/v1/conversations/${dm.id}/customer`, undefined],
        ["POST", `/api/v1/conversations/extraction-proposals/${proposal.id}/decide`, { decision: "reject" }]
      ] as const
      for (const [method, path, body] of writes) {
        const refused = yield* call(path, bearer(reader, method, body))
        assert.strictEqual(refused.status, 403, `${method} ${path}: ${refused.text}`)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
      }
      for (const path of ["/api/v1/conversations", `/api/v1/conversations/${dm.id}`, `/api/v1/conversations/${dm.id}/extraction-proposals`]) {
        const refused = yield* call(path, bearer(neither))
        assert.strictEqual(refused.status, 403, `${path}: ${refused.text}`)
      }
      // Nothing sent, in the owner's sandbox world or the stranger's (each profile has its own, decision 0109).
      assert.deepStrictEqual(yield* outboundTo(owner.key, "social_dm", dmContact), [])
      assert.deepStrictEqual(yield* outboundTo(stranger.key, "social_dm", dmContact), [])
      const still = yield* call(`/api/v1/conversations/${dm.id}/extraction-proposals`, bearer(owner.key))
      assert.strictEqual(still.json.data[0].status, "pending")
      const logged = yield* piiRows(owner.profile)
      assert.isTrue(logged.some((r) => r.route === "POST /api/v1/conversations/:conversationId/reply" && r.result === "denied"), JSON.stringify(logged))
    }))

  it.effect("person reads are refused on a healthcare-family profile (403), logged as denied", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* inboxProfile()
      const dm = (yield* conversations(key))[0]
      assert.isDefined(dm)
      yield* Effect.flatMap(SqlClient, (sql) => sql`UPDATE profiles SET privacy_mode = 'hipaa' WHERE id = ${profile.profileId}`)
      for (const path of ["/api/v1/conversations", `/api/v1/conversations/${dm?.id}`, `/api/v1/conversations/${dm?.id}/extraction-proposals`]) {
        const refused = yield* call(path, bearer(key))
        assert.strictEqual(refused.status, 403, `${path}: ${refused.text}`)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual(refused.json.error.reason, "healthcare_family_profile")
      }
      const rows = yield* piiRows(profile)
      assert.isTrue(rows.some((r) => r.route === "GET /api/v1/conversations" && r.result === "denied"), JSON.stringify(rows))
    }))
})
