/**
 * The provider HTTP client and the AdPlatform port against the sandbox over real HTTP: reads
 * and writes, retries (a 500 then success; Retry-After honoured), the errors after the retries,
 * a dead token, the per-connection bucket, lazy paging, and one span per call.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream, Tracer } from "effect"
import { OutboundHttpLayer } from "../../src/platform/outbound-http.ts"
import { AdPlatformAdapter } from "../../src/connections/providers/adplatform/live.ts"
import { AdPlatform } from "../../src/connections/providers/adplatform/port.ts"
import { ProviderEndpoints } from "../../src/connections/providers/endpoints.ts"
import { DEFAULT_PROVIDER_HTTP, ProviderHttp, type ProviderHttpOptions } from "../../src/connections/providers/http.ts"
import type { ProviderSession } from "../../src/connections/providers/oauth/port.ts"
import { TestServer } from "../support/app.ts"
import { sandboxControl, sandboxToken, serveAppOnOwnPort } from "../support/providers.ts"

const client = (options: Partial<ProviderHttpOptions> = {}) =>
  // Fresh: the app built AdPlatformAdapter already (layers are memoised by reference) over its own client.
  Layer.fresh(AdPlatformAdapter).pipe(
    Layer.provideMerge(ProviderHttp.layerWith({ ...DEFAULT_PROVIDER_HTTP, ...options })),
    Layer.provide(OutboundHttpLayer),
    Layer.provideMerge(ProviderEndpoints.layer)
  )

let connections = 0
const session = (persona = "one_account") =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const { access_token } = yield* sandboxToken(url, "adplatform", persona)
    return {
      provider: "adplatform",
      connectionId: `conn-${++connections}`,
      accountId: "act_1001",
      accessToken: Redacted.make(access_token)
    } satisfies ProviderSession
  })

// The test controls of the world `sandboxToken` consents in (this file's own), as the operator.
const faults = (body: unknown) => sandboxControl("adplatform", "POST", "_faults", body)
const worldState = () => sandboxControl("adplatform", "GET", "_state")

const elapsed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const started = Date.now()
    const result = yield* effect
    return { result, ms: Date.now() - started }
  })

/** Records every span started under it. */
const recordingTracer = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("provider client", (it) => {
  it.effect("reads the structure and insights as streams; writes reach the provider and count", () =>
    Effect.gen(function*() {
      const ads = yield* AdPlatform
      const s = yield* session()
      const campaigns = yield* Stream.runCollect(ads.campaigns(s))
      assert.deepStrictEqual(campaigns.map((c) => c.id), ["cmp_1001_1", "cmp_1001_2", "cmp_1001_3"])
      assert.strictEqual(campaigns[0]?.objective, "OUTCOME_SALES")
      const adSets = yield* Stream.runCollect(ads.adSets(s))
      assert.isTrue(adSets.every((set) => set.learning_stage_status !== undefined))
      const all = yield* Stream.runCollect(ads.ads(s))
      assert.strictEqual(all.length, 10)
      assert.isTrue(all.some((ad) => ad.creative.destination_type === "chat_app_a" && ad.creative.welcome_message !== null))
      const days = yield* Stream.runCollect(ads.insights(s, { since: "2025-03-01", until: "2025-03-31" }))
      assert.isAbove(days.length, 200)
      assert.isTrue(days.every((row) => row.currency === "USD" && row.date >= "2025-03-01" && row.date <= "2025-03-31"))
      const before = (yield* worldState()).json.write_count
      yield* ads.setStatus(s, { level: "ad", id: "ad_1001_1_1_1", status: "paused" })
      yield* ads.setBudget(s, { level: "ad_set", id: "as_1001_2_1", daily_budget_minor: 4_200 })
      yield* ads.updateCreative(s, "ad_1001_2_1_1", { greeting: "Hello from the test" })
      const dataset = yield* ads.createDataset(s, "Test dataset")
      const state = (yield* worldState()).json
      assert.strictEqual(state.write_count, before + 4)
      assert.strictEqual((yield* ads.getAd(s, "ad_1001_1_1_1")).status, "paused")
      assert.strictEqual((yield* ads.getAdSet(s, "as_1001_2_1")).daily_budget_minor, 4_200)
      assert.strictEqual((yield* ads.getAd(s, "ad_1001_2_1_1")).creative.greeting, "Hello from the test")
      assert.isTrue((yield* ads.datasets(s)).some((d) => d.id === dataset.id))
      assert.strictEqual((yield* ads.pixels(s)).length, 1)
      const sent = yield* ads.sendEvents(s, dataset.id, [{
        event_name: "Lead",
        event_time: 1_760_000_000,
        event_id: "evt-client-1",
        action_source: "website",
        user_data: { em: ["hash"] }
      }])
      assert.strictEqual(sent.events_received, 1)
      yield* ads.setStatus(s, { level: "ad", id: "ad_1001_1_1_1", status: "active" })
    }).pipe(Effect.provide(client())))

  it.effect("getLead answers a lead that arrived; unknown objects are ProviderRefused 404", () =>
    Effect.gen(function*() {
      const ads = yield* AdPlatform
      const s = yield* session()
      const arrived = yield* sandboxControl("adplatform", "PATCH", "_state", { arrive: { kind: "lead", ad_id: "ad_1001_3_1_2" } })
      const lead = yield* ads.getLead(s, arrived.json.lead.leadgen_id)
      assert.strictEqual(lead.ad_id, "ad_1001_3_1_2")
      assert.strictEqual(lead.campaign_id, "cmp_1001_3")
      assert.isTrue(lead.field_data.some((field) => field.name === "email"))
      const missing = yield* Effect.flip(ads.getCampaign(s, "cmp_nope"))
      assert.strictEqual(missing._tag, "ProviderRefused")
      if (missing._tag === "ProviderRefused") assert.deepInclude(missing, { status: 404, code: "not_found" })
    }).pipe(Effect.provide(client())))

  it.effect("a write without the manage permission is ProviderPermissionMissing; a dead token is ProviderAuthRevoked", () =>
    Effect.gen(function*() {
      const ads = yield* AdPlatform
      const readOnly = yield* session("no_manage_ads_permission")
      const refused = yield* Effect.flip(ads.setBudget(readOnly, { level: "campaign", id: "cmp_1001_1", daily_budget_minor: 6_000 }))
      assert.strictEqual(refused._tag, "ProviderPermissionMissing")
      if (refused._tag === "ProviderPermissionMissing") assert.strictEqual(refused.permission, "ads_management")
      const dead = yield* Effect.flip(ads.getCampaign({ ...readOnly, accessToken: Redacted.make("tok_dead") }, "cmp_1001_1"))
      assert.strictEqual(dead._tag, "ProviderAuthRevoked")
    }).pipe(Effect.provide(client())))

  it.effect("retries a 500 and succeeds; honours Retry-After on a 429 (waits at least the header)", () =>
    Effect.gen(function*() {
      const ads = yield* AdPlatform
      const s = yield* session()
      yield* faults({ fail_next: 1 })
      const campaign = yield* ads.getCampaign(s, "cmp_1001_1")
      assert.strictEqual(campaign.id, "cmp_1001_1")
      assert.strictEqual((yield* worldState()).json.faults.fail_next, 0)
      yield* faults({ throttle: 1 })
      const { ms } = yield* elapsed(ads.getCampaign(s, "cmp_1001_1"))
      assert.isAtLeast(ms, 1_000)
    }).pipe(Effect.provide(client({ baseDelayMs: 20 }))))

  it.effect("after the retries: ProviderThrottled (429) and ProviderUnavailable (5xx, timeout)", () =>
    Effect.gen(function*() {
      const ads = yield* AdPlatform
      const s = yield* session()
      yield* faults({ throttle: 5 })
      const throttled = yield* Effect.flip(ads.getCampaign(s, "cmp_1001_1"))
      assert.strictEqual(throttled._tag, "ProviderThrottled")
      if (throttled._tag === "ProviderThrottled") assert.strictEqual(throttled.retryAfterSeconds, 1)
      yield* faults({ throttle: 0, fail_next: 5 })
      const failing = yield* Effect.flip(ads.getCampaign(s, "cmp_1001_1"))
      assert.strictEqual(failing._tag, "ProviderUnavailable")
      if (failing._tag === "ProviderUnavailable") assert.strictEqual(failing.status, 500)
      yield* faults({ fail_next: 0, timeout_ms: 700 })
      const slow = yield* Effect.flip(ads.getCampaign(s, "cmp_1001_1"))
      yield* faults({ timeout_ms: 0 })
      assert.strictEqual(slow._tag, "ProviderUnavailable")
      if (slow._tag === "ProviderUnavailable") assert.strictEqual(slow.status, null)
    }).pipe(Effect.provide(client({ retries: 1, baseDelayMs: 20, attemptTimeoutMs: 250 }))))

  it.effect("a call that creates something is not retried after a timeout (the provider may have acted)", () =>
    Effect.gen(function*() {
      const ads = yield* AdPlatform
      const s = yield* session()
      const counted = () => Effect.map(worldState(), (state) => state.json.counters.api_calls as number)
      yield* faults({ timeout_ms: 500 })
      const before = yield* counted()
      const slow = yield* Effect.flip(ads.createDataset(s, "Once only"))
      yield* faults({ timeout_ms: 0 })
      assert.strictEqual(slow._tag, "ProviderUnavailable")
      // One create reached the provider (the state read itself is not an API call).
      assert.strictEqual((yield* counted()) - before, 1)
      const beforeRead = yield* counted()
      yield* faults({ timeout_ms: 500 })
      yield* Effect.flip(ads.getCampaign(s, "cmp_1001_1"))
      yield* faults({ timeout_ms: 0 })
      assert.strictEqual((yield* counted()) - beforeRead, 3)
    }).pipe(Effect.provide(client({ retries: 2, baseDelayMs: 20, attemptTimeoutMs: 200 }))))

  it.effect("the bucket bounds one connection's call rate; another connection is not held back", () =>
    Effect.gen(function*() {
      const ads = yield* AdPlatform
      const s = yield* session()
      // 11 calls on one connection and, at the same time, one on another connection.
      const [burst, other] = yield* Effect.all([
        elapsed(Effect.forEach(Array.from({ length: 11 }, () => 0), () => ads.getCampaign(s, "cmp_1001_1"), {
          concurrency: "unbounded"
        })),
        elapsed(ads.getCampaign({ ...s, connectionId: "conn-other" }, "cmp_1001_1"))
      ], { concurrency: "unbounded" })
      // 10 a second with a burst of 1: the 11th call starts a second after the first.
      assert.isAtLeast(burst.ms, 950)
      assert.isBelow(other.ms, burst.ms / 2)
    }).pipe(Effect.provide(client({ ratePerSecond: 10, burst: 1 }))))

  it.effect("pages are fetched lazily; one span per call with provider, operation, status and connection", () =>
    Effect.gen(function*() {
      const http = yield* ProviderHttp
      const s = yield* session()
      const { spans, tracer } = recordingTracer()
      const firstThree = yield* Stream.runCollect(
        http.pages({
          provider: "adplatform",
          operation: "adplatform.listAds",
          connectionId: s.connectionId,
          accessToken: s.accessToken,
          method: "GET",
          path: "/v1/accounts/act_1001/ads"
        }, 2).pipe(Stream.take(3))
      ).pipe(Effect.withTracer(tracer))
      assert.strictEqual(firstThree.length, 3)
      const calls = spans.filter((span) => span.name === "provider.adplatform.listAds")
      assert.strictEqual(calls.length, 2)
      const span = calls[0]!
      assert.strictEqual(span.attributes.get("provider.name"), "adplatform")
      assert.strictEqual(span.attributes.get("provider.operation"), "adplatform.listAds")
      assert.strictEqual(span.attributes.get("provider.connection_id"), s.connectionId)
      assert.strictEqual(span.attributes.get("http.response.status_code"), 200)
    }).pipe(Effect.provide(client())))
})
