/**
 * The `chat_app_a` sandbox over real HTTP through the service's ChatAppA port: seeded business
 * accounts, templates and conversations (click-to-chat referral with `ctwa_clid`), text and
 * template sends, template analytics switching on (`insights_enabling`), the dataset, and inbound
 * messages pushed signed to a subscribed receiver.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import { ChatAppALayer } from "../../src/connections/providers/chat-app-a/live.ts"
import { ChatAppA } from "../../src/connections/providers/chat-app-a/port.ts"
import { ProviderOAuthLayer } from "../../src/connections/providers/oauth/live.ts"
import { ProviderOAuth } from "../../src/connections/providers/oauth/port.ts"
import { verifyCallback } from "../../src/connections/providers/signing.ts"
import { eventually } from "../support/eventually.ts"
import { callbackCatcher, LOOPBACK_CALLBACKS, sandboxControl, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { connectSandbox } from "../support/sandbox-kinds.ts"

const ports = Layer.merge(ProviderOAuthLayer, ChatAppALayer)

const patchState = (body: unknown) =>
  sandboxControl("chat_app_a", "PATCH", "_state", body)

layer(serveAppOnOwnPort({ providers: LOOPBACK_CALLBACKS }), { timeout: "90 seconds", excludeTestServices: true })("sandbox chat_app_a", (it) => {
  it.effect("seeded: business account, phone number, templates, two conversations, one from an ad with ctwa_clid", () =>
    Effect.gen(function*() {
      const chat = yield* ChatAppA
      const { session } = yield* connectSandbox("chat_app_a")
      const account = yield* chat.businessAccount(session)
      assert.deepStrictEqual([account.id, account.currency, account.insights], ["ca_waba_0001", "USD", "off"])
      const phones = yield* chat.phoneNumbers(session)
      assert.deepStrictEqual(phones.map((p) => p.id), ["ca_phone_0001"])
      const templates = yield* Stream.runCollect(chat.templates(session))
      assert.deepStrictEqual(templates.map((t) => [t.name, t.status]), [["welcome", "APPROVED"], ["order_update", "APPROVED"], ["spring_promo", "PENDING"]])
      const conversations = yield* Stream.runCollect(chat.conversations(session))
      assert.strictEqual(conversations.length, 2)
      const messages = yield* Stream.runCollect(Stream.flatMap(Stream.fromIterable(conversations), (c) => chat.messages(session, c.id)))
      const referred = messages.filter((m) => m.referral !== null)
      assert.strictEqual(referred.length, 1)
      assert.strictEqual(referred[0]?.referral?.ctwa_clid, "clid_0001_1")
      // The ad-platform sandbox's click-to-chat ad, pointing at this number.
      assert.strictEqual(referred[0]?.referral?.ad_id, "ad_1001_2_1_1")
      assert.strictEqual(phones[0]?.display_phone_number, "+15550001001")
      // The same seed gives the same world: _state shows the fixed shape.
      const state = yield* sandboxControl("chat_app_a", "GET", "_state")
      for (const key of ["business_accounts", "templates", "conversations", "messages", "datasets", "write_count"]) {
        assert.property(state.json, key)
      }
    }).pipe(Effect.provide(ports)))

  it.effect("sends text inside the service window and approved templates any time; refuses the rest", () =>
    Effect.gen(function*() {
      const chat = yield* ChatAppA
      const { session } = yield* connectSandbox("chat_app_a")
      const before = (yield* sandboxControl("chat_app_a", "GET", "_state")).json.write_count as number
      // Free text needs the person to have written in the last 24 hours.
      const cold = yield* Effect.flip(chat.sendText(session, { phoneNumberId: "ca_phone_0001", to: "351920000001", text: "Hello!" }))
      assert.strictEqual(cold._tag === "ProviderRefused" ? cold.code : cold._tag, "recipient_unavailable")
      const seeded = yield* Effect.flip(chat.sendText(session, { phoneNumberId: "ca_phone_0001", to: "ca_contact_0001_1", text: "Still there?" }))
      assert.strictEqual(seeded._tag === "ProviderRefused" ? seeded.code : seeded._tag, "outside_service_window")
      yield* patchState({ arrive: { kind: "message", phone_number_id: "ca_phone_0001", from: "351920000001", text: "Hi there" } })
      const text = yield* chat.sendText(session, { phoneNumberId: "ca_phone_0001", to: "351920000001", text: "Hello!" })
      const template = yield* chat.sendTemplate(session, {
        phoneNumberId: "ca_phone_0001",
        to: "351920000001",
        template: { name: "welcome", language: "en_US" }
      })
      assert.strictEqual(text.conversation_id, template.conversation_id)
      const sent = yield* chat.getMessage(session, template.id)
      assert.deepStrictEqual([sent.direction, sent.type, sent.template?.name, sent.status], ["outbound", "template", "welcome", "sent"])
      const pending = yield* Effect.flip(chat.sendTemplate(session, {
        phoneNumberId: "ca_phone_0001",
        to: "351920000001",
        template: { name: "spring_promo", language: "en_US" }
      }))
      assert.strictEqual(pending._tag === "ProviderRefused" ? pending.code : pending._tag, "template_not_approved")
      const unknown = yield* Effect.flip(chat.sendTemplate(session, {
        phoneNumberId: "ca_phone_0001",
        to: "351920000001",
        template: { name: "nosuch", language: "en_US" }
      }))
      assert.strictEqual(unknown._tag === "ProviderRefused" ? unknown.code : unknown._tag, "template_not_found")
      const readOnly = yield* connectSandbox("chat_app_a", "no_manage_ads_permission")
      const denied = yield* Effect.flip(chat.sendText(readOnly.session, { phoneNumberId: "ca_phone_0001", to: "1", text: "x" }))
      assert.strictEqual(denied._tag, "ProviderPermissionMissing")
      const after = (yield* sandboxControl("chat_app_a", "GET", "_state")).json.write_count as number
      assert.strictEqual(after - before, 2)
    }).pipe(Effect.provide(ports)))

  it.effect("template analytics: the first call switches insights on (insights_enabling), then seeded daily rows", () =>
    Effect.gen(function*() {
      const chat = yield* ChatAppA
      const { session } = yield* connectSandbox("chat_app_a", "two_accounts", 1)
      assert.strictEqual(session.accountId, "ca_waba_0002")
      const range = { since: "2026-10-01", until: "2026-10-03" }
      const first = yield* Effect.flip(chat.templateAnalytics(session, range))
      assert.strictEqual(first._tag, "TemplateInsightsEnabling")
      if (first._tag === "TemplateInsightsEnabling") assert.isAtLeast(first.retryAfterSeconds, 1)
      assert.strictEqual((yield* chat.businessAccount(session)).insights, "enabling")
      const rows = yield* eventually(
        chat.templateAnalytics(session, range).pipe(Effect.option),
        Option.isSome,
        { what: "template analytics to be on", within: "10 seconds", every: "250 millis" }
      ).pipe(Effect.map(Option.getOrThrow))
      // Two approved templates (the pending one has none) over three days, in the account's currency.
      assert.strictEqual(rows.length, 6)
      assert.isTrue(rows.every((row) => row.currency === "EUR" && row.delivered <= row.sent && row.read <= row.delivered))
      assert.deepStrictEqual(yield* chat.templateAnalytics(session, range), rows)
      const one = yield* chat.templateAnalytics(session, { ...range, templateIds: ["ca_tpl_0002_1"] })
      assert.deepStrictEqual(one, rows.filter((row) => row.template_id === "ca_tpl_0002_1"))
      assert.strictEqual((yield* chat.businessAccount(session)).insights, "on")
    }).pipe(Effect.provide(ports)))

  it.effect("the business account's dataset: none, created once, then found; it records business_messaging conversions", () =>
    Effect.gen(function*() {
      const chat = yield* ChatAppA
      const { session } = yield* connectSandbox("chat_app_a", "two_accounts", 1)
      assert.isTrue(Option.isNone(yield* chat.dataset(session)))
      const created = yield* chat.createDataset(session)
      const again = yield* chat.createDataset(session)
      assert.deepStrictEqual(again, created)
      assert.deepStrictEqual(yield* chat.dataset(session), Option.some(created))
      const event = {
        event_name: "Purchase",
        event_time: 1_790_000_000,
        event_id: "ord-1",
        action_source: "business_messaging",
        messaging_channel: "chat_app_a" as const,
        user_data: { ctwa_clid: "clid-1" },
        custom_data: { value: 12.5, currency: "USD" }
      }
      assert.deepStrictEqual(yield* chat.sendEvents(session, created.id, [event]), { events_received: 1 })
      const noClick = yield* Effect.flip(chat.sendEvents(session, created.id, [{ ...event, user_data: {} }]))
      assert.strictEqual(noClick._tag === "ProviderRefused" ? noClick.code : noClick._tag, "invalid_parameter")
      const state = yield* sandboxControl("chat_app_a", "GET", "_state")
      assert.deepInclude(state.json.datasets, { id: created.id, account_id: "ca_waba_0002", name: created.name })
      assert.strictEqual(state.json.received_events.length, 1)
      assert.deepInclude(state.json.received_events[0], { dataset_id: created.id, event_id: "ord-1", action_source: "business_messaging" })
    }).pipe(Effect.provide(ports)))

  it.effect("an inbound message from a click-to-chat ad and a read receipt are pushed, signed with the app secret", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const chat = yield* ChatAppA
      const receiver = yield* callbackCatcher
      const { session } = yield* connectSandbox("chat_app_a")
      yield* oauth.subscribe(session, receiver.url)
      const arrived = yield* patchState({
        arrive: {
          kind: "message",
          phone_number_id: "ca_phone_0001",
          from: "351930000009",
          name: "Rita",
          text: "Is the offer still on?",
          referral: { ad_id: "ad_77", ctwa_clid: "clid-xyz", headline: "Spring offer" }
        }
      })
      assert.strictEqual(arrived.status, 200)
      yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 1, { what: "the push", within: "5 seconds" })
      const push = receiver.received[0]
      assert.isDefined(push)
      if (push === undefined) return
      assert.isTrue(verifyCallback("chat_app_a", sandboxSecretOf("chat_app_a"), push.headers, push.body))
      assert.isFalse(verifyCallback("chat_app_a", sandboxSecretOf("chat_app_a"), push.headers, push.body.replace("clid-xyz", "clid-abc")))
      const payload = JSON.parse(push.body)
      const value = payload.entry[0].changes[0].value
      assert.strictEqual(payload.entry[0].id, "ca_waba_0001")
      assert.deepStrictEqual(value.messages[0].referral, { source_type: "ad", source_id: "ad_77", ctwa_clid: "clid-xyz", headline: "Spring offer" })
      assert.strictEqual(value.contacts[0].profile.name, "Rita")
      // The business answers, and the person reads it: a status push.
      const reply = yield* chat.sendText(session, { phoneNumberId: "ca_phone_0001", to: "351930000009", text: "Yes!" })
      yield* patchState({ arrive: { kind: "status", message_id: reply.id, status: "read" } })
      yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 2, { what: "the status push", within: "5 seconds" })
      const status = JSON.parse(receiver.received[1]?.body ?? "{}")
      assert.deepInclude(status.entry[0].changes[0].value.statuses[0], { id: reply.id, status: "read" })
      assert.strictEqual((yield* chat.getMessage(session, reply.id)).status, "read")
    }).pipe(Effect.provide(ports), Effect.scoped))

  it.effect("bad arrivals are 400 and change nothing", () =>
    Effect.gen(function*() {
      const before = (yield* sandboxControl("chat_app_a", "GET", "_state")).json.messages.length as number
      assert.strictEqual((yield* patchState({ arrive: { kind: "message", from: "1" } })).status, 400)
      assert.strictEqual((yield* patchState({ arrive: { kind: "message", from: "1", text: "x", referral: { ctwa_clid: "c" } } })).status, 400)
      assert.strictEqual((yield* patchState({ arrive: { kind: "nosuch" } })).status, 400)
      assert.strictEqual((yield* patchState({ objects: [{ id: "nosuch", status: "x" }] })).status, 404)
      assert.strictEqual((yield* patchState({ objects: [{ id: "ca_tpl_0001_1", status: "LIVE" }] })).status, 400)
      assert.strictEqual((yield* patchState({ objects: [{ id: "ca_waba_0003", insights: "maybe" }] })).status, 400)
      assert.strictEqual((yield* patchState({ objects: [{ id: "ca_waba_0003", insights_delay_seconds: -1 }] })).status, 400)
      const after = (yield* sandboxControl("chat_app_a", "GET", "_state")).json.messages.length as number
      assert.strictEqual(after, before)
    }))

  // Last: revoking kills every grant of this sandbox.
  it.effect("a grant death pushes a signed deauthorize change and the port answers ProviderAuthRevoked", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const chat = yield* ChatAppA
      const receiver = yield* callbackCatcher
      const { session } = yield* connectSandbox("chat_app_a")
      yield* oauth.subscribe(session, receiver.url)
      yield* sandboxControl("chat_app_a", "POST", "_faults", { revoke_tokens: true })
      yield* eventually(Effect.sync(() => receiver.received.length), (n) => n >= 1, { what: "the grant-death push", within: "5 seconds" })
      const push = receiver.received[0]
      if (push === undefined) return assert.fail("no push")
      assert.isTrue(verifyCallback("chat_app_a", sandboxSecretOf("chat_app_a"), push.headers, push.body))
      const payload = JSON.parse(push.body)
      assert.strictEqual(payload.entry[0].id, "ca_waba_0001")
      assert.strictEqual(payload.entry[0].changes[0].field, "deauthorize")
      assert.strictEqual((yield* Effect.flip(chat.businessAccount(session)))._tag, "ProviderAuthRevoked")
      yield* sandboxControl("chat_app_a", "POST", "_faults", { revoke_tokens: false })
    }).pipe(Effect.provide(ports), Effect.scoped))
})
