/**
 * The `social_dm`, `page_messenger` and `short_video_messaging` sandboxes over real HTTP through
 * their ports: seeded accounts and conversations, `social_dm`'s login types, replies (only to
 * someone who wrote first), read-only grants refused, inbound messages with an ad referral and
 * receipts pushed signed in each provider's scheme.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { MessagingLayer } from "../../src/connections/providers/messaging/live.ts"
import { type MessagingApi, PageMessenger, ShortVideoMessaging, SocialDm } from "../../src/connections/providers/messaging/port.ts"
import { ProviderOAuthLayer } from "../../src/connections/providers/oauth/live.ts"
import { ProviderOAuth } from "../../src/connections/providers/oauth/port.ts"
import type { ProviderKind } from "../../src/connections/providers/registry.ts"
import { verifyCallback } from "../../src/connections/providers/signing.ts"
import { eventually } from "../support/eventually.ts"
import { callbackCatcher, LOOPBACK_CALLBACKS, sandboxControl, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { connectSandbox } from "../support/sandbox-kinds.ts"

const ports = Layer.merge(ProviderOAuthLayer, MessagingLayer)

const patchState = (provider: ProviderKind, body: unknown) =>
  sandboxControl(provider, "PATCH", "_state", body)

const KINDS = [
  { provider: "social_dm" as const, port: Effect.gen(function*(): Effect.fn.Return<MessagingApi, never, SocialDm> {
    return yield* SocialDm
  }), prefix: "sdm" },
  { provider: "page_messenger" as const, port: Effect.gen(function*(): Effect.fn.Return<MessagingApi, never, PageMessenger> {
    return yield* PageMessenger
  }), prefix: "pm" },
  { provider: "short_video_messaging" as const, port: Effect.gen(function*(): Effect.fn.Return<MessagingApi, never, ShortVideoMessaging> {
    return yield* ShortVideoMessaging
  }), prefix: "svm" }
]

layer(serveAppOnOwnPort({ providers: LOOPBACK_CALLBACKS }), { timeout: "90 seconds", excludeTestServices: true })("sandbox messaging kinds", (it) => {
  it.effect("seeded accounts and conversations; replies go to people who wrote; a read-only grant cannot send", () =>
    Effect.forEach(KINDS, ({ provider, port, prefix }) =>
      Effect.gen(function*() {
        const api: MessagingApi = yield* port
        const { session } = yield* connectSandbox(provider)
        const account = yield* api.account(session)
        assert.strictEqual(account.id, `${prefix}_acct_0001`)
        const conversations = yield* Stream.runCollect(api.conversations(session))
        assert.strictEqual(conversations.length, 2, provider)
        const first = conversations.find((c) => c.contact_id.endsWith("_1"))
        assert.isDefined(first)
        if (first === undefined) return
        const history = yield* Stream.runCollect(api.messages(session, first.id))
        assert.deepStrictEqual(history.map((m) => m.direction), ["inbound", "outbound"])
        assert.strictEqual(history[0]?.referral?.ad_id, "ad_1001_2_1_1")
        const before = (yield* sandboxControl(provider, "GET", "_state")).json.write_count as number
        // The seeded conversation is old: free text waits until the person writes again.
        const stale = yield* Effect.flip(api.sendText(session, { recipientId: first.contact_id, text: "On our way" }))
        assert.strictEqual(stale._tag === "ProviderRefused" ? stale.code : stale._tag, "outside_service_window")
        yield* patchState(provider, { arrive: { kind: "message", account_id: session.accountId, from: first.contact_id, text: "Hello again" } })
        const sent = yield* api.sendText(session, { recipientId: first.contact_id, text: "On our way" })
        assert.strictEqual(sent.conversation_id, first.id)
        assert.strictEqual((yield* api.getMessage(session, sent.id)).text, "On our way")
        const cold = yield* Effect.flip(api.sendText(session, { recipientId: "stranger", text: "hi" }))
        assert.strictEqual(cold._tag === "ProviderRefused" ? cold.code : cold._tag, "recipient_unavailable")
        const readOnly = yield* connectSandbox(provider, "no_manage_ads_permission")
        const denied = yield* Effect.flip(api.sendText(readOnly.session, { recipientId: first.contact_id, text: "x" }))
        assert.strictEqual(denied._tag, "ProviderPermissionMissing")
        assert.strictEqual((yield* sandboxControl(provider, "GET", "_state")).json.write_count, before + 1)
      })).pipe(Effect.provide(ports)))

  it.effect("social_dm knows each account's login type: business_login first, page_login second", () =>
    Effect.gen(function*() {
      const api = yield* SocialDm
      const first = yield* connectSandbox("social_dm", "two_accounts", 0)
      const second = yield* connectSandbox("social_dm", "two_accounts", 1)
      assert.strictEqual(first.me.accounts.length, 2)
      assert.strictEqual((yield* api.account(first.session)).login_type, "business_login")
      assert.strictEqual((yield* api.account(second.session)).login_type, "page_login")
      const pm = yield* PageMessenger
      const page = yield* connectSandbox("page_messenger")
      assert.strictEqual((yield* pm.account(page.session)).login_type, null)
    }).pipe(Effect.provide(ports)))

  it.effect("inbound messages with an ad referral and receipts are pushed, signed in each provider's scheme", () =>
    Effect.forEach(KINDS, ({ provider, port, prefix }) =>
      Effect.gen(function*() {
        const api: MessagingApi = yield* port
        const oauth = yield* ProviderOAuth
        const receiver = yield* callbackCatcher
        const { session } = yield* connectSandbox(provider)
        yield* oauth.subscribe(session, receiver.url)
        const arrived = yield* patchState(provider, {
          arrive: { kind: "message", from: `${prefix}_person_9`, name: "Noor", text: "Hello from the ad", referral: { ad_id: "ad_55", ref: "spring" } }
        })
        assert.strictEqual(arrived.status, 200)
        yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 1, { what: `${provider} push`, within: "5 seconds" })
        const push = receiver.received[0]
        if (push === undefined) return assert.fail("no push")
        const secret = sandboxSecretOf(provider)
        assert.isTrue(verifyCallback(provider, secret, push.headers, push.body), provider)
        assert.isFalse(verifyCallback(provider, secret, push.headers, `${push.body} `), provider)
        assert.include(push.body, "ad_55")
        if (provider === "short_video_messaging") {
          assert.isString(push.headers["x-signature-timestamp"])
          const payload = JSON.parse(push.body)
          assert.deepInclude(payload, { event: "message.received", account_id: session.accountId })
          assert.strictEqual(payload.data.referral.ad_id, "ad_55")
        } else {
          assert.match(push.headers["x-hub-signature-256"] ?? "", /^sha256=[0-9a-f]{64}$/)
          const payload = JSON.parse(push.body)
          assert.strictEqual(payload.object, provider === "social_dm" ? "instagram" : "page")
          const event = payload.entry[0].messaging[0]
          assert.deepStrictEqual(event.referral, { ad_id: "ad_55", source: "ADS", type: "OPEN_THREAD", ref: "spring" })
          assert.strictEqual(event.sender.id, `${prefix}_person_9`)
        }
        // The conversation now exists, so the business may answer; the receipt is pushed too.
        const reply = yield* api.sendText(session, { recipientId: `${prefix}_person_9`, text: "Hi Noor" })
        yield* patchState(provider, { arrive: { kind: "status", message_id: reply.id, status: "delivered" } })
        yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 2, { what: `${provider} receipt`, within: "5 seconds" })
        assert.include(receiver.received[1]?.body ?? "", reply.id)
        assert.strictEqual((yield* api.getMessage(session, reply.id)).status, "delivered")
      }).pipe(Effect.scoped)).pipe(Effect.provide(ports)))

  it.effect("bad arrivals are 400, unknown objects 404, and nothing changes", () =>
    Effect.gen(function*() {
      const before = (yield* sandboxControl("page_messenger", "GET", "_state")).json.messages.length as number
      assert.strictEqual((yield* patchState("page_messenger", { arrive: { kind: "message", text: "no sender" } })).status, 400)
      assert.strictEqual((yield* patchState("page_messenger", { arrive: { kind: "status", message_id: "nosuch", status: "read" } })).status, 404)
      assert.strictEqual((yield* patchState("page_messenger", { arrive: { kind: "message", account_id: "nosuch", from: "a", text: "b" } })).status, 404)
      assert.strictEqual((yield* sandboxControl("page_messenger", "GET", "_state")).json.messages.length, before)
    }))
})
