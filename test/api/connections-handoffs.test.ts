/**
 * Connect hand-offs, connections and provider callbacks over real HTTP against the sandbox
 * providers served by the app itself (decision 0057).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHmac } from "node:crypto"
import { call, serveApp, TestServer } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { asApp, type PartnerApp, registerApp } from "../support/partner.ts"
import { driveConsent, freePort, ownPortSettings, runHandoff, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth, worldHandle } from "../support/sandbox-world.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write"]

const json = (key: string, method: string, body?: unknown) => ({
  method,
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const mint = (key: string, provider: string, body: unknown = {}) =>
  call(`/api/v1/connections/${provider}/handoff`, json(key, "POST", body))

/** A raw request to the served app, redirects not followed. */
const raw = (pathOrUrl: string, init: RequestInit = {}) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const target = pathOrUrl.startsWith("http") ? pathOrUrl : `${url}${pathOrUrl}`
    const response = yield* Effect.promise(() => fetch(target, { redirect: "manual", ...init }))
    const text = yield* Effect.promise(() => response.text())
    return { status: response.status, location: response.headers.get("location"), text }
  })

const paramsOf = (location: string | null) => new URL(location ?? "http://invalid.example/").searchParams

/** Mints, consents at the sandbox as `persona`, and follows the provider's redirect to the service's callback. */
const connectVia = Effect.fn("test.connectVia")(function*(
  key: string,
  options: {
    readonly persona?: string
    readonly decision?: "approve" | "cancel"
    readonly provider?: string
    readonly returnUrl?: string
  } = {}
) {
  const { url } = yield* TestServer
  const provider = options.provider ?? "adplatform"
  const run = yield* runHandoff(key, provider, {
    returnUrl: options.returnUrl ?? `${url}/done?from=test`,
    ...(provider === "commerce" ? { shop: "acme-store" } : {}),
    ...(options.persona === undefined ? {} : { persona: options.persona }),
    ...(options.decision === undefined ? {} : { decision: options.decision })
  })
  return { handoff: run.handoff, callbackUrl: run.consent.location ?? "", callback: run.callback }
})

const outboxRows = (profileId: string, topic: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ id: string; payload: { id: string; data: Record<string, unknown> } }>`
      SELECT id, payload FROM outbox WHERE profile_id = ${profileId} AND topic = ${topic} ORDER BY created_at, id`)

/** A provider's `_state` in the sandbox world of `key`'s profile (decision 0109). */
const sandboxState = (key: string, provider: string) =>
  Effect.map(call(`/sandbox/${provider}/_state`, { headers: keyAuth(key) }), (r) => {
    assert.strictEqual(r.status, 200, r.text)
    return r.json
  })

const newProfileWithKey = Effect.fn("test.newProfileWithKey")(function*(profile?: SeededProfile) {
  const seeded = profile ?? (yield* seedProfile())
  const { key } = yield* seedApiKey(seeded, { scopes: SCOPES })
  return { profile: seeded, key }
})

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("connect hand-offs", (it) => {
  describe("mint", () => {
    it.effect("refuses an unknown provider (404), an unregistered return_url origin and a bad shop (400); nothing written", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const unknown = yield* mint(key, "myspace", {})
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.json.error.code, "not_found")
        const elsewhere = yield* mint(key, "adplatform", { return_url: "https://evil.example/back" })
        assert.strictEqual(elsewhere.status, 400)
        assert.strictEqual(elsewhere.json.error.code, "invalid_request")
        assert.strictEqual(elsewhere.json.error.reason, "return_url_not_registered")
        for (const shop of [undefined, "", "not a shop", "https://evil.example/store/acme", "acme.other-domain.com"]) {
          const response = yield* mint(key, "commerce", shop === undefined ? {} : { shop })
          assert.strictEqual(response.status, 400, `${shop}: ${response.text}`)
        }
        const sql = yield* SqlClient
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM connect_handoffs WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(rows[0]?.n, 0)
      }))

    it.effect("an app's key may return to its registered origins only; commerce takes the shop's three forms", () =>
      Effect.gen(function*() {
        const app: PartnerApp = yield* registerApp("Connect partner")
        const profile = yield* seedProfile()
        const sql = yield* SqlClient
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE secret_hash IS NOT NULL AND profile_id = ${profile.profileId}`
        const ok = yield* mint(key, "adplatform", { return_url: "https://partner.example/connected?x=1" })
        assert.strictEqual(ok.status, 201, ok.text)
        assert.match(ok.json.data.handoff_url, /\/h\/[A-Za-z0-9_-]+$/)
        assert.strictEqual(ok.json.data.status, "minted")
        assert.strictEqual(ok.json.data.result, null)
        const own = yield* mint(key, "adplatform", { return_url: `${(yield* TestServer).url}/x` })
        assert.strictEqual(own.status, 400)
        for (const shop of ["acme-store", "acme-store.mystore.shop", "https://admin.mystore.shop/store/acme-store"]) {
          const response = yield* mint(key, "commerce", { shop })
          assert.strictEqual(response.status, 201, `${shop}: ${response.text}`)
          assert.strictEqual(response.json.data.shop, "acme-store")
        }
        const poll = yield* call(`/api/v1/connections/handoffs/${ok.json.data.handoff_id}`, json(key, "GET"))
        assert.strictEqual(poll.status, 200)
        assert.strictEqual(poll.json.data.handoff_id, ok.json.data.handoff_id)
        const otherKey = (yield* newProfileWithKey()).key
        const foreign = yield* call(`/api/v1/connections/handoffs/${ok.json.data.handoff_id}`, json(otherKey, "GET"))
        assert.strictEqual(foreign.status, 404)
      }))
  })

  describe("consent", () => {
    it.effect("approve: the /h link redirects to start_url, the callback connects once, returns with status, and a double callback writes once", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { url } = yield* TestServer
        const minted = yield* mint(key, "adplatform", { return_url: `${url}/done` })
        const handoff = minted.json.data
        const link = yield* raw(handoff.handoff_url)
        assert.strictEqual(link.status, 302)
        assert.strictEqual(link.location, handoff.start_url)

        const consent = yield* driveConsent(handoff.start_url)
        assert.strictEqual(consent.status, 303)
        const callback = yield* raw(consent.location ?? "")
        assert.strictEqual(callback.status, 302, callback.text)
        const back = paramsOf(callback.location)
        assert.isTrue((callback.location ?? "").startsWith(`${url}/done?`))
        assert.deepStrictEqual([...back.keys()].sort(), ["handoff_id", "reason", "status"])
        assert.strictEqual(back.get("status"), "success")
        assert.strictEqual(back.get("reason"), "connected")
        assert.strictEqual(back.get("handoff_id"), handoff.handoff_id)

        const poll = yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))
        assert.strictEqual(poll.json.data.status, "success")
        // The same reason lands in result.reason.
        assert.strictEqual(poll.json.data.result.reason, "connected")
        const connectionId = poll.json.data.result.connection_id
        assert.isString(connectionId)
        const list = yield* call("/api/v1/connections", json(key, "GET"))
        assert.deepStrictEqual(list.json.data.map((c: { id: string }) => c.id), [connectionId])
        const connection = list.json.data[0]
        assert.strictEqual(connection.provider, "adplatform")
        assert.strictEqual(connection.status, "active")
        assert.isString(connection.provider_account_id)
        // A profile a person created has the attribution add-on: its ad account delivers spend.
        assert.strictEqual(connection.delivers_spend, true)

        // Tokens are sealed at rest.
        const sql = yield* SqlClient
        const sealed = yield* sql<{ access_token_sealed: string }>`SELECT access_token_sealed FROM connections WHERE id = ${connectionId}`
        assert.match(sealed[0]?.access_token_sealed ?? "", /^v1\./)

        const connected = yield* outboxRows(profile.profileId, "connection.connected")
        assert.strictEqual(connected.length, 1)
        assert.strictEqual(connected[0]?.payload.data["provider"], "adplatform")

        // The push channel is open on the account.
        const state = yield* sandboxState(key, "adplatform")
        assert.include(JSON.stringify(state), `${url}/hooks/adplatform`)

        // The same callback again (a double click): the link is used; nothing written twice.
        const again = yield* raw(consent.location ?? "")
        assert.strictEqual(again.status, 302)
        assert.deepStrictEqual(Object.fromEntries(paramsOf(again.location)), {
          status: "failed",
          reason: "handoff_used",
          handoff_id: handoff.handoff_id
        })
        assert.strictEqual((yield* outboxRows(profile.profileId, "connection.connected")).length, 1)
        const count = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM connections WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(count[0]?.n, 1)

        // The link is used up.
        const used = yield* raw(handoff.handoff_url)
        assert.strictEqual(used.status, 302)
        assert.strictEqual(paramsOf(used.location).get("reason"), "handoff_used")
      }))

    it.effect("a commerce hand-off carries the shop to the provider's consent and connects", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { callback, handoff } = yield* connectVia(key, { provider: "commerce" })
        assert.strictEqual(new URL(handoff.start_url).searchParams.get("shop"), "acme-store")
        assert.strictEqual(paramsOf(callback.location).get("status"), "success")
        const connected = yield* outboxRows(profile.profileId, "connection.connected")
        assert.strictEqual(connected[0]?.payload.data["provider"], "commerce")
      }))

    it.effect("two callbacks at once (a double click) run one consent: one connection, one event", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { url } = yield* TestServer
        const handoff = (yield* mint(key, "crm", { return_url: `${url}/done` })).json.data
        const consent = yield* driveConsent(handoff.start_url)
        const both = yield* Effect.all([raw(consent.location ?? ""), raw(consent.location ?? "")], { concurrency: 2 })
        // One consent per hand-off: the first connects, the second finds the link used.
        for (const answer of both) assert.strictEqual(answer.status, 302)
        assert.deepStrictEqual(
          both.map((answer) => `${paramsOf(answer.location).get("status")}/${paramsOf(answer.location).get("reason")}`).sort(),
          ["failed/handoff_used", "success/connected"]
        )
        const sql = yield* SqlClient
        const count = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM connections WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(count[0]?.n, 1)
        assert.strictEqual((yield* outboxRows(profile.profileId, "connection.connected")).length, 1)
      }))

    it.effect("a grant without the manage-ads permission connects as needs_action", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfileWithKey()
        const { callback } = yield* connectVia(key, { persona: "no_manage_ads_permission" })
        assert.strictEqual(paramsOf(callback.location).get("status"), "success")
        const connection = (yield* call("/api/v1/connections", json(key, "GET"))).json.data[0]
        assert.strictEqual(connection.status, "needs_action")
        assert.strictEqual(connection.status_reason, "manage_ads_permission_missing")
        assert.notInclude(connection.scopes, "ads_management")
      }))

    it.effect("cancel: cancelled with user_cancelled; a link without return_url shows a Continue card", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfileWithKey()
        const { callback, handoff } = yield* connectVia(key, { decision: "cancel" })
        assert.strictEqual(callback.status, 302)
        assert.strictEqual(paramsOf(callback.location).get("status"), "cancelled")
        assert.strictEqual(paramsOf(callback.location).get("reason"), "user_cancelled")
        const poll = yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))
        assert.deepStrictEqual(poll.json.data.result, { status: "cancelled", reason: "user_cancelled", connection_id: null })

        const bare = yield* mint(key, "adplatform", {})
        const card = yield* raw(bare.json.data.handoff_url)
        assert.strictEqual(card.status, 200)
        assert.include(card.text, "Continue")
        assert.include(card.text, "/sandbox/adplatform/oauth/authorize")
      }))

    it.effect("two accounts: pending_selection, the candidates, finalize; an account live on a sibling profile is 409 and the token stays", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { callback } = yield* connectVia(key, { persona: "two_accounts" })
        assert.strictEqual(paramsOf(callback.location).get("status"), "pending_selection")
        assert.strictEqual(paramsOf(callback.location).get("reason"), "account_selection_required")
        const pending = yield* call("/api/v1/connections/pending/adplatform", json(key, "GET"))
        assert.strictEqual(pending.status, 200)
        assert.strictEqual(pending.json.data.length, 1)
        const accounts = pending.json.data[0].accounts
        assert.strictEqual(accounts.length, 2)
        assert.isFalse(accounts[0].connected_elsewhere)

        // A sibling profile of the same workspace connects the first account.
        const sql = yield* SqlClient
        const sibling = { workspaceId: profile.workspaceId, profileId: crypto.randomUUID() }
        yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${sibling.profileId}, ${profile.workspaceId}, 'Sibling')`
        const siblingKey = (yield* newProfileWithKey(sibling)).key
        yield* connectVia(siblingKey, { persona: "two_accounts" })
        const siblingFinal = yield* call(
          "/api/v1/connections/pending/adplatform/finalize",
          json(siblingKey, "POST", { account_id: accounts[0].id })
        )
        assert.strictEqual(siblingFinal.status, 200, siblingFinal.text)

        const listed = yield* call("/api/v1/connections/pending/adplatform", json(key, "GET"))
        assert.isTrue(listed.json.data[0].accounts.find((a: { id: string }) => a.id === accounts[0].id).connected_elsewhere)
        const refused = yield* call("/api/v1/connections/pending/adplatform/finalize", json(key, "POST", { account_id: accounts[0].id }))
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.error.code, "account_connected_elsewhere")
        const still = yield* call("/api/v1/connections/pending/adplatform", json(key, "GET"))
        assert.strictEqual(still.json.data.length, 1)

        const unknownAccount = yield* call("/api/v1/connections/pending/adplatform/finalize", json(key, "POST", { account_id: "nope" }))
        assert.strictEqual(unknownAccount.status, 400)

        const finalized = yield* call("/api/v1/connections/pending/adplatform/finalize", json(key, "POST", { account_id: accounts[1].id }))
        assert.strictEqual(finalized.status, 200, finalized.text)
        assert.strictEqual(finalized.json.data.provider_account_id, accounts[1].id)
        assert.strictEqual((yield* call("/api/v1/connections/pending/adplatform", json(key, "GET"))).json.data.length, 0)
        assert.strictEqual((yield* outboxRows(profile.profileId, "connection.connected")).length, 1)
        assert.strictEqual((yield* call("/api/v1/connections/pending/myspace", json(key, "GET"))).status, 404)
      }))
  })

  describe("re-entering a used hand-off (state table: link opened after use)", () => {
    /** Every way back into a settled hand-off answers `failed`/`handoff_used` to `return_url` and writes nothing. */
    const reenterAll = Effect.fn("test.reenterAll")(function*(handoff: { handoff_id: string; handoff_url: string; start_url: string }, callbackUrl: string) {
      // connectVia's return_url carries `from=test`: its own query is kept.
      const expected = { from: "test", status: "failed", reason: "handoff_used", handoff_id: handoff.handoff_id }
      const { url } = yield* TestServer
      // The /h/ page.
      const link = yield* raw(handoff.handoff_url)
      assert.strictEqual(link.status, 302)
      assert.isTrue((link.location ?? "").startsWith(`${url}/done?`))
      assert.deepStrictEqual(Object.fromEntries(paramsOf(link.location)), expected)
      // start_url again: the provider consents afresh (a new code), the service refuses the used hand-off.
      for (const decision of ["approve", "cancel"] as const) {
        const consent = yield* driveConsent(handoff.start_url, { decision })
        assert.strictEqual(consent.status, 303)
        // An approval brings a fresh code (a cancel the same `error=access_denied`).
        if (decision === "approve") assert.notStrictEqual(new URL(consent.location ?? "").searchParams.get("code"), new URL(callbackUrl).searchParams.get("code"))
        const back = yield* raw(consent.location ?? "")
        assert.strictEqual(back.status, 302, back.text)
        assert.deepStrictEqual(Object.fromEntries(paramsOf(back.location)), expected, decision)
      }
      // The provider's redirect replayed as it was.
      const replay = yield* raw(callbackUrl)
      assert.strictEqual(replay.status, 302)
      assert.deepStrictEqual(Object.fromEntries(paramsOf(replay.location)), expected)
    })

    const countOf = (profileId: string) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const rows = yield* sql<{ connections: number; pending: number }>`
          SELECT (SELECT count(*)::int FROM connections WHERE profile_id = ${profileId}) AS connections,
                 (SELECT count(*)::int FROM pending_connections WHERE profile_id = ${profileId}) AS pending`
        return { ...rows[0], connected: (yield* outboxRows(profileId, "connection.connected")).length }
      })

    it.effect("after success: the /h/ link, start_url (approve or cancel) and the replayed callback answer handoff_used; one connection, one event, the poll unchanged", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { callback, callbackUrl, handoff } = yield* connectVia(key)
        assert.deepStrictEqual(Object.fromEntries(paramsOf(callback.location)), {
          from: "test",
          status: "success",
          reason: "connected",
          handoff_id: handoff.handoff_id
        })
        const before = (yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))).json.data
        assert.strictEqual(before.result.reason, "connected")
        assert.deepStrictEqual(yield* countOf(profile.profileId), { connections: 1, pending: 0, connected: 1 })

        yield* reenterAll(handoff, callbackUrl)

        assert.deepStrictEqual(yield* countOf(profile.profileId), { connections: 1, pending: 0, connected: 1 })
        const after = (yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))).json.data
        assert.deepStrictEqual(after, before)
      }))

    it.effect("after cancel and after a pending selection: the same handoff_used everywhere; nothing connected, nothing parked twice", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const cancelled = yield* connectVia(key, { decision: "cancel" })
        assert.deepStrictEqual(Object.fromEntries(paramsOf(cancelled.callback.location)), {
          from: "test",
          status: "cancelled",
          reason: "user_cancelled",
          handoff_id: cancelled.handoff.handoff_id
        })
        yield* reenterAll(cancelled.handoff, cancelled.callbackUrl)
        assert.deepStrictEqual(yield* countOf(profile.profileId), { connections: 0, pending: 0, connected: 0 })
        const poll = yield* call(`/api/v1/connections/handoffs/${cancelled.handoff.handoff_id}`, json(key, "GET"))
        assert.deepStrictEqual(poll.json.data.result, { status: "cancelled", reason: "user_cancelled", connection_id: null })

        const parked = yield* connectVia(key, { persona: "two_accounts" })
        assert.deepStrictEqual(Object.fromEntries(paramsOf(parked.callback.location)), {
          from: "test",
          status: "pending_selection",
          reason: "account_selection_required",
          handoff_id: parked.handoff.handoff_id
        })
        yield* reenterAll(parked.handoff, parked.callbackUrl)
        assert.deepStrictEqual(yield* countOf(profile.profileId), { connections: 0, pending: 1, connected: 0 })
        const parkedPoll = yield* call(`/api/v1/connections/handoffs/${parked.handoff.handoff_id}`, json(key, "GET"))
        assert.deepStrictEqual(parkedPoll.json.data.result, { status: "pending_selection", reason: "account_selection_required", connection_id: null })
      }))

    it.effect("without a return_url the used hand-off answers the 400 page naming handoff_used", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const handoff = (yield* mint(key, "crm", {})).json.data
        const first = yield* driveConsent(handoff.start_url)
        const done = yield* raw(first.location ?? "")
        assert.strictEqual(done.status, 200)
        assert.include(done.text, "reason: <code>connected</code>")
        const second = yield* driveConsent(handoff.start_url)
        const used = yield* raw(second.location ?? "")
        assert.strictEqual(used.status, 400)
        assert.include(used.text, "reason: <code>handoff_used</code>")
        const link = yield* raw(handoff.handoff_url)
        assert.strictEqual(link.status, 400)
        assert.include(link.text, "<code>handoff_used</code>")
        assert.deepStrictEqual(yield* countOf(profile.profileId), { connections: 1, pending: 0, connected: 1 })
      }))
  })

  describe("failures and recovery", () => {
    it.effect("a provider failure is failed/internal_error and the same link works again", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfileWithKey()
        const { url } = yield* TestServer
        const handoff = (yield* mint(key, "adplatform", { return_url: `${url}/done` })).json.data
        const consent = yield* driveConsent(handoff.start_url)
        // The provider refuses this code (a spent or forged one): the exchange fails.
        const forged = new URL(consent.location ?? "")
        forged.searchParams.set("code", "not-a-code")
        const failed = yield* raw(forged.toString())
        assert.strictEqual(failed.status, 302)
        assert.strictEqual(paramsOf(failed.location).get("status"), "failed")
        assert.strictEqual(paramsOf(failed.location).get("reason"), "internal_error")
        // Not settled: the link leads to the consent again, and the real code completes it.
        const link = yield* raw(handoff.handoff_url)
        assert.strictEqual(link.status, 302)
        assert.strictEqual(link.location, handoff.start_url)
        // A provider error other than the person's refusal is not settled either.
        const broken = new URL(consent.location ?? "")
        broken.searchParams.delete("code")
        broken.searchParams.set("error", "server_error")
        const providerError = yield* raw(broken.toString())
        assert.strictEqual(paramsOf(providerError.location).get("reason"), "internal_error")
        const done = yield* raw(consent.location ?? "")
        assert.strictEqual(paramsOf(done.location).get("status"), "success")
      }))

    it.effect("a consent stopped partway holds the link for 3 minutes, then the link is usable again", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfileWithKey()
        const { url } = yield* TestServer
        const handoff = (yield* mint(key, "adplatform", { return_url: `${url}/done` })).json.data
        const consent = yield* driveConsent(handoff.start_url)
        const sql = yield* SqlClient
        // What a crash between the code exchange and the write leaves behind.
        yield* sql`UPDATE connect_handoffs SET status = 'in_consent', consent_started_at = now() - interval '1 minute'
                   WHERE id = ${handoff.handoff_id}`
        const held = yield* raw(handoff.handoff_url)
        assert.strictEqual(paramsOf(held.location).get("reason"), "handoff_used")
        const heldCallback = yield* raw(consent.location ?? "")
        assert.strictEqual(paramsOf(heldCallback.location).get("reason"), "handoff_used")
        yield* sql`UPDATE connect_handoffs SET consent_started_at = now() - interval '181 seconds' WHERE id = ${handoff.handoff_id}`
        const usable = yield* raw(handoff.handoff_url)
        assert.strictEqual(usable.location, handoff.start_url)
        const done = yield* raw(consent.location ?? "")
        assert.strictEqual(paramsOf(done.location).get("status"), "success")
      }))
  })

  describe("disconnect and DELETE", () => {
    it.effect("disconnect: 409 while a sync runs, 403 for an app key on a profile its app did not provision, then revoked with outbox, audit and the push channel closed", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { url } = yield* TestServer
        // A provider no other test file connects (they share the database), and the profile's own
        // sandbox world (decision 0109): this connection is the account's only one, so its push channel closes.
        const { handoff } = yield* connectVia(key, { provider: "short_video_messaging" })
        const poll = yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))
        const connectionId: string = poll.json.data.result.connection_id
        const sql = yield* SqlClient
        const channel = { account_id: (yield* call("/api/v1/connections", json(key, "GET"))).json.data[0].provider_account_id, callback_url: `${url}/hooks/short_video_messaging` }
        assert.deepInclude((yield* sandboxState(key, "short_video_messaging")).subscriptions, channel)

        const jobId = crypto.randomUUID()
        yield* sql`INSERT INTO sync_jobs (id, profile_id, connection_id, kind, status) VALUES (${jobId}, ${profile.profileId}, ${connectionId}, 'structure', 'running')`
        const busy = yield* call(`/api/v1/connections/${connectionId}/disconnect`, json(key, "POST"))
        assert.strictEqual(busy.status, 409)
        assert.strictEqual(busy.json.error.code, "invalid_state")
        yield* sql`UPDATE sync_jobs SET status = 'done' WHERE id = ${jobId}`

        const app = yield* registerApp("Not the provisioner")
        const appKey = yield* seedApiKey(profile, { scopes: SCOPES })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id = ${appKey.id}`
        const foreign = yield* call(`/api/v1/connections/${connectionId}/disconnect`, json(appKey.key, "POST"))
        assert.strictEqual(foreign.status, 403)

        const done = yield* call(`/api/v1/connections/${connectionId}/disconnect`, json(key, "POST"))
        assert.strictEqual(done.status, 200, done.text)
        assert.deepStrictEqual(done.json.data, { id: connectionId, provider: "short_video_messaging", disconnected: true })
        assert.strictEqual((yield* call("/api/v1/connections", json(key, "GET"))).json.data.length, 0)
        const revoked = yield* outboxRows(profile.profileId, "connection.revoked")
        assert.strictEqual(revoked.length, 1)
        assert.strictEqual(revoked[0]?.payload.data["provider"], "short_video_messaging")
        const audit = yield* sql<{ actor_user_id: string | null }>`
          SELECT actor_user_id FROM audit_events WHERE target_id = ${connectionId} AND action = 'connection.disconnected'`
        assert.strictEqual(audit.length, 1)
        assert.isNull(audit[0]?.actor_user_id)
        assert.notDeepInclude((yield* sandboxState(key, "short_video_messaging")).subscriptions, channel)
        assert.strictEqual((yield* call(`/api/v1/connections/${connectionId}/disconnect`, json(key, "POST"))).status, 404)
      }))

    it.effect("a person's session disconnects too; the audit entry still names no person", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { handoff } = yield* connectVia(key, { provider: "calendar" })
        const connectionId: string = (yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))).json.data.result.connection_id
        const member = yield* seedMemberSession(profile, "owner")
        const done = yield* call(`/api/v1/connections/${connectionId}/disconnect?profile_id=${profile.profileId}`, {
          method: "POST",
          headers: member.headers
        })
        assert.strictEqual(done.status, 200, done.text)
        const sql = yield* SqlClient
        const audit = yield* sql<{ actor_kind: string; actor_user_id: string | null }>`
          SELECT actor_kind, actor_user_id FROM audit_events WHERE target_id = ${connectionId} AND action = 'connection.disconnected'`
        assert.deepStrictEqual(audit.map((row) => [row.actor_kind, row.actor_user_id]), [["session", null]])
      }))

    it.effect("DELETE gives up the app's grant and revokes the app's older keys; the connection stays", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const app = yield* registerApp("Provisioner")
        const profile = yield* seedProfile()
        yield* sql`UPDATE profiles SET provisioned_by_app_id = ${app.id} WHERE id = ${profile.profileId}`
        const older = yield* seedApiKey(profile, { scopes: SCOPES })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id}, created_at = now() - interval '1 hour' WHERE id = ${older.id}`
        const current = yield* seedApiKey(profile, { scopes: SCOPES })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id = ${current.id}`
        const { callback, handoff } = yield* connectVia(current.key, { returnUrl: "https://partner.example/connected" })
        assert.isTrue((callback.location ?? "").startsWith("https://partner.example/connected?status=success"))
        const poll = yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(current.key, "GET"))
        const connectionId: string = poll.json.data.result.connection_id

        const ownKey = yield* seedApiKey(profile, { scopes: SCOPES })
        const refused = yield* call(`/api/v1/connections/${connectionId}`, json(ownKey.key, "DELETE"))
        assert.strictEqual(refused.status, 403)

        const released = yield* call(`/api/v1/connections/${connectionId}`, json(current.key, "DELETE"))
        assert.strictEqual(released.status, 200, released.text)
        assert.deepStrictEqual(released.json.data, { id: connectionId, released: true, revoked_keys: 1 })
        const keys = yield* sql<{ id: string; revoked: boolean }>`
          SELECT id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id IN (${older.id}, ${current.id}, ${ownKey.id})`
        const revoked = new Map(keys.map((k) => [k.id, k.revoked]))
        assert.isTrue(revoked.get(older.id))
        assert.isFalse(revoked.get(current.id))
        assert.isFalse(revoked.get(ownKey.id))
        assert.strictEqual((yield* call("/api/v1/connections", json(current.key, "GET"))).json.data.length, 1)
      }))
  })

  describe("archiving a profile", () => {
    it.effect("takes its connections, hand-offs and pending selections with it", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Archiving partner")
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })).json.data
        const profile = { profileId: created.profile_id, workspaceId: created.workspace_id }
        const { key } = yield* newProfileWithKey(profile)
        yield* connectVia(key)
        yield* connectVia(key, { persona: "two_accounts", provider: "crm" })
        const archived = yield* asApp(app, `/api/v1/profiles/${created.profile_id}`, "DELETE")
        assert.strictEqual(archived.status, 200, archived.text)
        const sql = yield* SqlClient
        const left = yield* sql<{ n: number }>`
          SELECT (SELECT count(*) FROM connections WHERE profile_id = ${profile.profileId})
               + (SELECT count(*) FROM connect_handoffs WHERE profile_id = ${profile.profileId})
               + (SELECT count(*) FROM pending_connections WHERE profile_id = ${profile.profileId}) AS n`
        assert.strictEqual(Number(left[0]?.n), 0)
      }))
  })

  describe("provider callbacks", () => {
    const sign = (body: string) => `sha256=${createHmac("sha256", sandboxSecretOf("adplatform")).update(body, "utf8").digest("hex")}`
    /** A callback as the sandbox sends it: signed, naming the world (decision 0109) of the profile meant to receive it. */
    const hook = (body: string, signature: string | null, world: string | null) =>
      call("/hooks/adplatform", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(signature === null ? {} : { "x-hub-signature-256": signature }),
          ...(world === null ? {} : { "x-sandbox-world": world })
        },
        body
      })

    it.effect("a lead-form submission becomes leadgen.received once, even redelivered; a bad signature is 401 and writes nothing", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        const { handoff } = yield* connectVia(key)
        const poll = yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))
        const list = yield* call("/api/v1/connections", json(key, "GET"))
        const accountId: string = list.json.data[0].provider_account_id
        void poll
        const leadgenId = `lead-${crypto.randomUUID()}`
        const body = JSON.stringify({
          object: "page",
          entry: [{
            id: accountId,
            time: Math.floor(Date.now() / 1000),
            changes: [{ field: "leadgen", value: { leadgen_id: leadgenId, form_id: "f1", ad_id: "ad1", account_id: accountId } }]
          }]
        })
        const world = worldHandle(profile.profileId)
        const bad = yield* hook(body, "sha256=00", world)
        assert.strictEqual(bad.status, 401)
        assert.strictEqual(bad.json.error.code, "unauthorized")
        assert.strictEqual((yield* hook(body, null, world)).status, 401)
        // A well-signed push naming no world, or a forged one, reaches no tenant (decision 0109).
        for (const forged of [null, `${profile.profileId}.${"0".repeat(32)}`]) {
          const unnamed = yield* hook(body, sign(body), forged)
          assert.strictEqual(unnamed.status, 401, unnamed.text)
          assert.strictEqual(unnamed.json.error.code, "unauthorized")
          assert.strictEqual(unnamed.json.error.reason, "bad_signature")
        }
        const sql = yield* SqlClient
        const seen = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM provider_events WHERE event_id = ${leadgenId}`
        assert.strictEqual(seen[0]?.n, 0)

        const first = yield* hook(body, sign(body), world)
        assert.strictEqual(first.status, 200, first.text)
        assert.deepStrictEqual(first.json, { received: true, fresh: true })
        const again = yield* hook(body, sign(body), world)
        assert.deepStrictEqual(again.json, { received: true, fresh: false })
        const rows = yield* outboxRows(profile.profileId, "leadgen.received")
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]?.payload.id, leadgenId)
        assert.strictEqual(rows[0]?.payload.data["leadgen_id"], leadgenId)
        assert.strictEqual(rows[0]?.payload.data["form_id"], "f1")
        assert.strictEqual(rows[0]?.payload.data["profile_id"], profile.profileId)

        assert.strictEqual((yield* call("/hooks/myspace", { method: "POST", body: "{}" })).status, 404)
      }))

    it.effect("a lead arriving at the sandbox is pushed, signed, and becomes leadgen.received with the lead's fields", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        yield* connectVia(key)
        const list = yield* call("/api/v1/connections", json(key, "GET"))
        const accountId: string = list.json.data[0].provider_account_id
        const state = yield* sandboxState(key, "adplatform")
        const account = state.accounts.find((a: { id: string }) => a.id === accountId)
        const adId: string = account.campaigns[0].ad_sets[0].ads[0].id
        const leadgenId = `lead-${crypto.randomUUID()}`
        const arrived = yield* call("/sandbox/adplatform/_state", {
          method: "PATCH",
          headers: { "content-type": "application/json", ...keyAuth(key) },
          body: JSON.stringify({ arrive: { kind: "lead", ad_id: adId, leadgen_id: leadgenId } })
        })
        assert.strictEqual(arrived.status, 201, arrived.text)
        const rows = yield* eventually(outboxRows(profile.profileId, "leadgen.received"), (r) => r.length > 0, {
          what: "the leadgen.received row",
          within: "15 seconds",
          every: "200 millis"
        })
        assert.strictEqual(rows.length, 1)
        const data = rows[0]?.payload.data ?? {}
        assert.strictEqual(rows[0]?.payload.id, leadgenId)
        assert.strictEqual(data["ad_id"], adId)
        assert.strictEqual(data["profile_id"], profile.profileId)
        assert.isArray(data["field_data"])
        assert.isAbove((data["field_data"] as ReadonlyArray<unknown>).length, 0)
      }))

    it.effect("when the lead cannot be read the callback is 503 and writes nothing; the redelivery writes it", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        yield* connectVia(key)
        const accountId: string = (yield* call("/api/v1/connections", json(key, "GET"))).json.data[0].provider_account_id
        const faults = (body: unknown) =>
          call("/sandbox/adplatform/_faults", {
            method: "POST",
            headers: { "content-type": "application/json", ...keyAuth(key) },
            body: JSON.stringify(body)
          })
        // Every attempt of the lead read (the first and its retries) answers 500.
        const failing = yield* faults({ fail_next: 4 })
        assert.strictEqual(failing.status, 200, failing.text)
        const state = yield* sandboxState(key, "adplatform")
        const adId: string = state.accounts.find((a: { id: string }) => a.id === accountId).campaigns[0].ad_sets[0].ads[0].id
        const leadgenId = `lead-${crypto.randomUUID()}`
        const arrived = yield* call("/sandbox/adplatform/_state", {
          method: "PATCH",
          headers: { "content-type": "application/json", ...keyAuth(key) },
          body: JSON.stringify({ arrive: { kind: "lead", ad_id: adId, leadgen_id: leadgenId } })
        })
        assert.strictEqual(arrived.status, 201, arrived.text)
        const delivered = yield* eventually(
          sandboxState(key, "adplatform"),
          (s) => (s.deliveries ?? []).some((d: { status: number | null; at: string }) => d.status === 503),
          { what: "the push answered 503", within: "20 seconds", every: "200 millis" }
        )
        void delivered
        assert.strictEqual((yield* outboxRows(profile.profileId, "leadgen.received")).length, 0)
        const body = JSON.stringify({
          object: "page",
          entry: [{ id: accountId, time: Math.floor(Date.now() / 1000), changes: [{ field: "leadgen", value: { leadgen_id: leadgenId, ad_id: adId } }] }]
        })
        const again = yield* hook(body, sign(body), worldHandle(profile.profileId))
        assert.strictEqual(again.status, 200, again.text)
        const rows = yield* outboxRows(profile.profileId, "leadgen.received")
        assert.strictEqual(rows.length, 1)
        assert.isArray(rows[0]?.payload.data["field_data"])
      }))

    it.effect("a timestamped scheme refuses a stale timestamp (401) and takes a fresh one", () =>
      Effect.gen(function*() {
        const { profile } = yield* newProfileWithKey()
        const body = JSON.stringify({ event: "deal.updated", id: `evt-${crypto.randomUUID()}`, account_id: "portal-x" })
        const signed = (timestamp: number) => ({
          "content-type": "application/json",
          "x-sandbox-world": worldHandle(profile.profileId),
          "x-signature-timestamp": String(timestamp),
          "x-signature-256": `sha256=${createHmac("sha256", sandboxSecretOf("crm")).update(`${timestamp}.${body}`, "utf8").digest("hex")}`
        })
        const now = Math.floor(Date.now() / 1000)
        const stale = yield* call("/hooks/crm", { method: "POST", headers: signed(now - 600), body })
        assert.strictEqual(stale.status, 401)
        const fresh = yield* call("/hooks/crm", { method: "POST", headers: signed(now), body })
        assert.strictEqual(fresh.status, 200, fresh.text)
        assert.deepStrictEqual(fresh.json, { received: true, fresh: true })
        const replay = yield* call("/hooks/crm", { method: "POST", headers: signed(now), body })
        assert.deepStrictEqual(replay.json, { received: true, fresh: false })
      }))

    // The fault kills every grant the profile's sandbox world issued so far (decision 0109).
    it.effect.each(["crm", "adplatform"])("a grant death (revoke_tokens fault) on %s marks the connection reconnect_required with its event, once", (provider) =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfileWithKey()
        yield* connectVia(key, { provider })
        const faults = yield* call(`/sandbox/${provider}/_faults`, {
          method: "POST",
          headers: { "content-type": "application/json", ...keyAuth(key) },
          body: JSON.stringify({ revoke_tokens: true })
        })
        assert.strictEqual(faults.status, 200, faults.text)
        const list = yield* eventually(
          call("/api/v1/connections", json(key, "GET")),
          (r) => r.json.data[0]?.status === "reconnect_required",
          { what: "the connection to need a reconnect", within: "15 seconds", every: "200 millis" }
        )
        assert.strictEqual(list.json.data[0].status_reason, "grant_revoked")
        assert.strictEqual((yield* outboxRows(profile.profileId, "connection.reconnect_required")).length, 1)
        const restored = yield* call(`/sandbox/${provider}/_faults`, {
          method: "POST",
          headers: { "content-type": "application/json", ...keyAuth(key) },
          body: JSON.stringify({ revoke_tokens: false })
        })
        assert.strictEqual(restored.status, 200, restored.text)
      }))
  })
})

/** Hand-offs that expire after a second (SVC_HANDOFF_TTL_SECONDS=1). */
const shortLived = Layer.unwrap(Effect.map(freePort, (port) => {
  const settings = ownPortSettings(port)
  return serveApp({ ...settings, providers: { ...settings.providers, handoffTtlSeconds: 1 } })
}))

layer(shortLived, { timeout: "60 seconds", excludeTestServices: true })(
  "an expired hand-off",
  (it) => {
    it.effect("its link answers handoff_expired and its poll says so", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfileWithKey()
        const { url } = yield* TestServer
        const minted = yield* mint(key, "adplatform", { return_url: `${url}/done` })
        const handoff = minted.json.data
        const link = yield* eventually(raw(handoff.handoff_url), (r) => r.status === 302 && (r.location ?? "").includes("handoff_expired"), {
          what: "the link to expire",
          within: "10 seconds",
          every: "200 millis"
        })
        assert.strictEqual(paramsOf(link.location).get("status"), "failed")
        const poll = yield* call(`/api/v1/connections/handoffs/${handoff.handoff_id}`, json(key, "GET"))
        assert.strictEqual(poll.json.data.result.reason, "handoff_expired")
      }))
  }
)
