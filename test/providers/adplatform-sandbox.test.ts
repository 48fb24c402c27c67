/**
 * The ad platform's sandbox contract over real HTTP (docs/sandbox-providers.md): the fixed
 * `_state` shape, hand edits with `PATCH _state`, arrivals pushed signed to subscribers, every
 * fault, the rate limit per token, the API's paging, writes and their permission.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { verifyCallback } from "../../src/connections/providers/signing.ts"
import { call, TestServer } from "../support/app.ts"
import {
  callbackCatcher,
  LOOPBACK_CALLBACKS,
  SANDBOX_TOKEN_WORLD,
  sandboxControl,
  sandboxSecretOf,
  sandboxToken,
  serveAppOnOwnPort
} from "../support/providers.ts"
import { eventually } from "../support/eventually.ts"
import { worldHandle } from "../support/sandbox-world.ts"

const json = (method: string, body: unknown, token?: string): RequestInit => ({
  method,
  headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
  body: JSON.stringify(body)
})
const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } })

const tokenFor = (persona = "one_account") =>
  Effect.flatMap(TestServer, ({ url }) => sandboxToken(url, "adplatform", persona))

// The test controls of this file's world (the one `sandboxToken` consents in), as the operator.
const faults = (body: unknown) => sandboxControl("adplatform", "POST", "_faults", body)
const worldState = (method = "GET", body?: unknown) => sandboxControl("adplatform", method, "_state", body)

layer(serveAppOnOwnPort({ providers: LOOPBACK_CALLBACKS }), { timeout: "90 seconds", excludeTestServices: true })("ad platform sandbox", (it) => {
  it.effect("_state has the fixed shape: accounts → campaigns → ad_sets → ads, received_events, write_count", () =>
    Effect.gen(function*() {
      // Test controls open to a credential only (decision 0109): an anonymous caller is refused.
      const anonymous = yield* call("/sandbox/adplatform/_state")
      assert.strictEqual(anonymous.status, 401)
      assert.strictEqual(anonymous.json.error.code, "unauthorized")
      const state = yield* worldState()
      assert.strictEqual(state.status, 200)
      const { accounts, received_events, write_count } = state.json
      assert.isArray(received_events)
      assert.isNumber(write_count)
      assert.deepStrictEqual(accounts.slice(0, 2).map((a: any) => [a.id, a.currency]), [["act_1001", "USD"], ["act_1002", "EUR"]])
      const campaign = accounts[0].campaigns[0]
      for (const key of ["id", "name", "status", "daily_budget_minor", "ad_sets"]) assert.property(campaign, key)
      const adSet = campaign.ad_sets[0]
      for (const key of ["id", "name", "status", "daily_budget_minor", "lifetime_budget_minor", "ads"]) assert.property(adSet, key)
      for (const key of ["id", "name", "status"]) assert.property(adSet.ads[0], key)
      assert.strictEqual(campaign.status, "active")
    }))

  it.effect("PATCH _state edits by hand (not a provider write); unknown ids 404, bad values 400, nothing changed", () =>
    Effect.gen(function*() {
      const before = (yield* worldState()).json
      const adSet = before.accounts[0].campaigns[1].ad_sets[0]
      const ad = adSet.ads[0]
      const patched = yield* worldState("PATCH", {
        objects: [{ id: ad.id, status: "PAUSED" }, { id: adSet.id, daily_budget_minor: 7_500 }]
      })
      assert.strictEqual(patched.status, 200)
      const after = (yield* worldState()).json
      const adSetAfter = after.accounts[0].campaigns[1].ad_sets[0]
      assert.strictEqual(adSetAfter.ads[0].status, "paused")
      assert.strictEqual(adSetAfter.daily_budget_minor, 7_500)
      assert.strictEqual(after.write_count, before.write_count)
      const unknown = yield* worldState("PATCH", { objects: [{ id: "ad_nope", status: "paused" }] })
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.json.error.code, "not_found")
      const bad = yield* worldState("PATCH", { objects: [{ id: ad.id, status: "sleeping" }] })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual((yield* worldState()).json.accounts[0].campaigns[1].ad_sets[0].ads[0].status, "paused")
      yield* worldState("PATCH", { objects: [{ id: ad.id, status: "active" }] })
    }))

  it.effect("the API: paged lists, one object, writes counted, insights deterministic per (ad, date)", () =>
    Effect.gen(function*() {
      const { access_token } = yield* tokenFor()
      const page1 = yield* call("/sandbox/adplatform/v1/accounts/act_1001/ads?limit=3", bearer(access_token))
      assert.strictEqual(page1.status, 200)
      assert.strictEqual(page1.json.data.length, 3)
      const page2 = yield* call(`/sandbox/adplatform/v1/accounts/act_1001/ads?limit=3&after=${page1.json.paging.next}`, bearer(access_token))
      assert.notStrictEqual(page2.json.data[0].id, page1.json.data[0].id)
      const chatAd = [...page1.json.data, ...page2.json.data].find((a: any) => a.creative.destination_type === "chat_app_a")
      assert.isDefined(chatAd)
      assert.isString(chatAd.creative.greeting)
      const notReached = yield* call("/sandbox/adplatform/v1/accounts/act_1002/ads", bearer(access_token))
      assert.strictEqual(notReached.status, 404)
      const range = "since=2025-01-01&until=2025-01-31&limit=500"
      const insights = yield* call(`/sandbox/adplatform/v1/accounts/act_1001/insights?${range}`, bearer(access_token))
      const again = yield* call(`/sandbox/adplatform/v1/accounts/act_1001/insights?${range}`, bearer(access_token))
      assert.isAbove(insights.json.data.length, 100)
      assert.deepStrictEqual(insights.json.data, again.json.data)
      const row = insights.json.data[0]
      assert.strictEqual(row.currency, "USD")
      assert.isTrue(Number.isInteger(row.spend_minor) && row.spend_minor > 0)
      const badRange = yield* call("/sandbox/adplatform/v1/accounts/act_1001/insights?since=2025-02-01&until=2025-01-01", bearer(access_token))
      assert.strictEqual(badRange.status, 400)
      const before = (yield* worldState()).json.write_count
      const paused = yield* call(`/sandbox/adplatform/v1/ads/${row.ad_id}`, json("POST", { status: "paused" }, access_token))
      assert.strictEqual(paused.status, 200)
      const ad = yield* call(`/sandbox/adplatform/v1/ads/${row.ad_id}`, bearer(access_token))
      assert.strictEqual(ad.json.status, "paused")
      assert.strictEqual((yield* worldState()).json.write_count, before + 1)
      yield* call(`/sandbox/adplatform/v1/ads/${row.ad_id}`, json("POST", { status: "active" }, access_token))
    }))

  it.effect("conversions: a dataset receives events and _state shows them", () =>
    Effect.gen(function*() {
      const { access_token } = yield* tokenFor()
      const datasets = yield* call("/sandbox/adplatform/v1/accounts/act_1001/datasets", bearer(access_token))
      const datasetId = datasets.json.data[0].id
      const sent = yield* call(`/sandbox/adplatform/v1/datasets/${datasetId}/events`, json("POST", {
        data: [{ event_name: "Purchase", event_time: 1_760_000_000, event_id: "evt-1", action_source: "website", user_data: { em: ["x"] } }]
      }, access_token))
      assert.strictEqual(sent.status, 200)
      assert.strictEqual(sent.json.events_received, 1)
      const state = (yield* worldState()).json
      assert.isTrue(state.received_events.some((e: any) => e.event_id === "evt-1" && e.dataset_id === datasetId))
    }))

  it.effect("conversions: a pixel is a dataset (same validation); an unknown id or another world's account still 404s", () =>
    Effect.gen(function*() {
      const { access_token } = yield* tokenFor()
      const pixels = yield* call("/sandbox/adplatform/v1/accounts/act_1001/pixels", bearer(access_token))
      const pixelId: string = pixels.json.data[0].id
      assert.strictEqual(pixelId, "px_1001")
      const event = { event_name: "Lead", event_time: 1_760_000_000, event_id: "px-evt-1", action_source: "website", user_data: { em: ["x"] } }
      const sent = yield* call(`/sandbox/adplatform/v1/datasets/${pixelId}/events`, json("POST", { data: [event] }, access_token))
      assert.strictEqual(sent.status, 200, sent.text)
      assert.strictEqual(sent.json.events_received, 1)
      const state = (yield* worldState()).json
      const seen = state.received_events.filter((e: any) => e.event_id === "px-evt-1")
      assert.deepStrictEqual(seen.map((e: any) => [e.dataset_id, e.account_id]), [["px_1001", "act_1001"]])

      const malformed = yield* call(`/sandbox/adplatform/v1/datasets/${pixelId}/events`, json("POST", { data: [{ event_name: "Lead" }] }, access_token))
      assert.strictEqual(malformed.status, 400, malformed.text)
      const unknown = yield* call("/sandbox/adplatform/v1/datasets/px_9999/events", json("POST", { data: [event] }, access_token))
      assert.strictEqual(unknown.status, 404, unknown.text)
      // The one_account persona reaches act_1001 only: act_1002's pixel exists but is not its to write to.
      const foreign = yield* call("/sandbox/adplatform/v1/datasets/px_1002/events", json("POST", { data: [event] }, access_token))
      assert.strictEqual(foreign.status, 404, foreign.text)
      const after = (yield* worldState()).json
      assert.strictEqual(after.received_events.filter((e: any) => e.event_id === "px-evt-1").length, 1, "only the accepted event was recorded")
    }))

  it.effect("a lead arrival pushes the leadgen webhook signed with X-Hub-Signature-256; GET /v1/leads answers it", () =>
    Effect.gen(function*() {
      const catcher = yield* callbackCatcher
      const { access_token } = yield* tokenFor()
      const subscribed = yield* call("/sandbox/adplatform/v1/accounts/act_1001/subscriptions", json("POST", {
        callback_url: `${catcher.url}/hooks/adplatform`
      }, access_token))
      assert.strictEqual(subscribed.status, 200)
      const arrived = yield* worldState("PATCH", {
        arrive: { kind: "lead", ad_id: "ad_1001_3_1_1", field_data: [{ name: "email", values: ["lead@example.com"] }] }
      })
      assert.strictEqual(arrived.status, 201)
      const leadgenId = arrived.json.lead.leadgen_id
      const pushed = yield* eventually(Effect.sync(() => catcher.received), (r) => r.length > 0, { what: "leadgen push", within: "5 seconds" })
      const push = pushed[0]!
      assert.strictEqual(push.path, "/hooks/adplatform")
      assert.isTrue(verifyCallback("adplatform", sandboxSecretOf("adplatform"), push.headers, push.body))
      // The push names the world it came from (decision 0109).
      assert.strictEqual(push.headers["x-sandbox-world"], worldHandle(SANDBOX_TOKEN_WORLD))
      const body = JSON.parse(push.body)
      assert.strictEqual(body.object, "page")
      assert.strictEqual(body.entry[0].id, "act_1001")
      assert.strictEqual(body.entry[0].changes[0].field, "leadgen")
      assert.deepInclude(body.entry[0].changes[0].value, { leadgen_id: leadgenId, ad_id: "ad_1001_3_1_1", adgroup_id: "as_1001_3_1", campaign_id: "cmp_1001_3" })
      const lead = yield* call(`/sandbox/adplatform/v1/leads/${leadgenId}`, bearer(access_token))
      assert.deepStrictEqual(lead.json.field_data, [{ name: "email", values: ["lead@example.com"] }])
      yield* call("/sandbox/adplatform/v1/accounts/act_1001/subscriptions", { method: "DELETE", ...bearer(access_token) })
    }))

  it.effect("faults: throttle answers 429 Retry-After 1 for the next N calls; error_rate 1 answers 500; timeout_ms waits", () =>
    Effect.gen(function*() {
      const { access_token } = yield* tokenFor()
      const me = () => call("/sandbox/adplatform/v1/me", bearer(access_token))
      yield* faults({ throttle: 2 })
      const first = yield* me()
      assert.strictEqual(first.status, 429)
      assert.strictEqual(first.headers.get("retry-after"), "1")
      assert.strictEqual(first.json.error.code, "rate_limited")
      assert.strictEqual((yield* me()).status, 429)
      assert.strictEqual((yield* me()).status, 200)
      yield* faults({ error_rate: 1 })
      const failed = yield* me()
      assert.strictEqual(failed.status, 500)
      assert.strictEqual(failed.json.error.code, "internal")
      yield* faults({ error_rate: 0, timeout_ms: 600 })
      const started = Date.now()
      assert.strictEqual((yield* me()).status, 200)
      assert.isAtLeast(Date.now() - started, 590)
      const read = yield* faults({ timeout_ms: 0 })
      assert.deepInclude(read.json, { throttle: 0, error_rate: 0, timeout_ms: 0 })
      const bad = yield* faults({ error_rate: 2 })
      assert.strictEqual(bad.status, 400)
    }))

  it.effect("missing_permission: grants lack ads_management and writes answer 403 permission_missing; so does the read-only persona", () =>
    Effect.gen(function*() {
      const readOnly = yield* tokenFor("no_manage_ads_permission")
      assert.notInclude(readOnly.scope.split(" "), "ads_management")
      const refused = yield* call("/sandbox/adplatform/v1/campaigns/cmp_1001_1", json("POST", { status: "paused" }, readOnly.access_token))
      assert.strictEqual(refused.status, 403)
      assert.deepStrictEqual(refused.json.error.code, "permission_missing")
      assert.strictEqual(refused.json.error.permission, "ads_management")
      const full = yield* tokenFor()
      yield* faults({ missing_permission: true })
      const me = yield* call("/sandbox/adplatform/v1/me", bearer(full.access_token))
      assert.notInclude(me.json.scopes, "ads_management")
      const refusedToo = yield* call("/sandbox/adplatform/v1/campaigns/cmp_1001_1", json("POST", { daily_budget_minor: 9_000 }, full.access_token))
      assert.strictEqual(refusedToo.status, 403)
      yield* faults({ missing_permission: false })
      const allowed = yield* call("/sandbox/adplatform/v1/campaigns/cmp_1001_1", json("POST", { daily_budget_minor: 9_000 }, full.access_token))
      assert.strictEqual(allowed.status, 200)
    }))

  it.effect("revoke_tokens: every token answers 401 invalid_token and a deauthorize push goes to subscribers", () =>
    Effect.gen(function*() {
      const catcher = yield* callbackCatcher
      const { access_token, refresh_token } = yield* tokenFor()
      yield* call("/sandbox/adplatform/v1/accounts/act_1001/subscriptions", json("POST", { callback_url: `${catcher.url}/hooks/adplatform` }, access_token))
      yield* faults({ revoke_tokens: true })
      const dead = yield* call("/sandbox/adplatform/v1/me", bearer(access_token))
      assert.strictEqual(dead.status, 401)
      assert.strictEqual(dead.json.error.code, "invalid_token")
      const pushed = yield* eventually(Effect.sync(() => catcher.received), (r) => r.length > 0, { what: "deauthorize push", within: "5 seconds" })
      const body = JSON.parse(pushed[0]!.body)
      assert.strictEqual(body.object, "permissions")
      assert.strictEqual(body.entry[0].changes[0].field, "deauthorize")
      assert.isTrue(verifyCallback("adplatform", sandboxSecretOf("adplatform"), pushed[0]!.headers, pushed[0]!.body))
      const refresh = yield* call("/sandbox/adplatform/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token,
          client_id: "sandbox-adplatform",
          client_secret: sandboxSecretOf("adplatform")
        }).toString()
      })
      assert.strictEqual(refresh.status, 400)
      yield* faults({ revoke_tokens: false })
      const fresh = yield* tokenFor()
      assert.strictEqual((yield* call("/sandbox/adplatform/v1/me", bearer(fresh.access_token))).status, 200)
    }))

  it.effect("the rate limit: more calls a second on one token than the limit answer 429 with Retry-After", () =>
    Effect.gen(function*() {
      const { access_token } = yield* tokenFor()
      // A low limit, so that a loaded machine still sends more than it within one second.
      yield* faults({ rate_limit_per_second: 5 })
      const answers = yield* Effect.forEach(
        Array.from({ length: 12 }, () => 0),
        () => call("/sandbox/adplatform/v1/me", bearer(access_token)),
        { concurrency: 12 }
      )
      yield* faults({ rate_limit_per_second: 100 })
      const limited = answers.filter((answer) => answer.status === 429)
      assert.isAbove(limited.length, 0)
      assert.strictEqual(limited[0]!.json.error.code, "rate_limited")
      assert.isAtLeast(Number(limited[0]!.headers.get("retry-after")), 1)
      assert.isAbove((yield* worldState()).json.counters.rate_limited, 0)
    }))

  it.effect("generated_account adds a large account listed first, its ads generated deterministically", () =>
    Effect.gen(function*() {
      const generated = yield* worldState("PATCH", { arrive: { kind: "generated_account", id: "act_9001", ads: 250 } })
      assert.strictEqual(generated.status, 201)
      assert.deepInclude(generated.json.account, { id: "act_9001", ads: 250, campaigns: 3 })
      const { access_token } = yield* tokenFor()
      const me = yield* call("/sandbox/adplatform/v1/me", bearer(access_token))
      assert.strictEqual(me.json.accounts[0].id, "act_9001")
      const ads = yield* call("/sandbox/adplatform/v1/accounts/act_9001/ads?limit=500", bearer(access_token))
      assert.strictEqual(ads.json.data.length, 250)
      assert.isNull(ads.json.paging.next)
    }))
})
