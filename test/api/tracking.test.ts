/**
 * The web tracker's API: tracking keys (idempotent by natural key), settings (a change queues
 * one coalesced replay), the snippet, and the collector `POST /t/collect` (decision 0031).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { CredentialPrefix, isWellFormed, mintSecret } from "../../src/kernel/credentials/tokens.ts"
import { COLLECT_PER_ADDRESS_PER_MINUTE } from "../../src/ingestion/tracking/tracker/service.ts"
import { ADPLATFORM_PIXEL_LOADER_URL } from "../../src/ingestion/tracking/tracker/snippet.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const BASE_URL = "http://svc.test"
const ORIGIN = "https://shop.example.com"
const CHROME =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
const IPHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
const GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const send = (path: string, headers: Record<string, string>, method = "GET", body?: unknown) =>
  call(path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A profile with an API key that manages tracking, its tracking key, and `origins` allowed. */
const trackedProfile = (options: { readonly origins?: ReadonlyArray<string>; readonly settings?: Record<string, unknown> } = {}) =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write", "analytics:read"], rateLimitPerMinute: 1000 })
    const auth = bearer(key)
    const created = yield* send("/api/v1/tracking/keys", auth, "POST")
    assert.strictEqual(created.status, 201)
    const patched = yield* send("/api/v1/tracking/settings", auth, "PATCH", {
      allowed_origins: options.origins ?? [ORIGIN],
      ...options.settings
    })
    assert.strictEqual(patched.status, 200)
    return { profile, auth, trackingKey: created.json.data.key as string, keyId: created.json.data.id as string }
  })

const event = (trackingKey: string, overrides: Record<string, unknown> = {}) => ({
  tracking_key: trackingKey,
  anonymous_id: "anon_0123456789",
  session_id: "sess_0123456789",
  type: "page_view",
  url: "https://shop.example.com/landing?utm_source=google&utm_medium=cpc&utm_campaign=Winter&gclid=abc#top",
  referrer: "https://www.google.com/",
  ...overrides
})

const collect = (body: unknown, headers: Record<string, string> = {}) =>
  call("/t/collect", {
    method: "POST",
    headers: { "content-type": "application/json", origin: ORIGIN, "user-agent": CHROME, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

interface TouchRow {
  readonly kind: string
  readonly event_type: string
  readonly anonymous_id: string
  readonly session_id: string | null
  readonly customer_id: string | null
  readonly join_method: string | null
  readonly channel: string
  readonly source: string
  readonly medium: string
  readonly campaign_name: string | null
  readonly click_id_kind: string | null
  readonly click_id: string | null
  readonly url: string
  readonly path: string
  readonly referrer_domain: string | null
  readonly device: string | null
  readonly browser: string | null
  readonly os: string | null
  readonly country: string | null
  readonly city: string | null
  readonly payload: Record<string, unknown>
}

const touchesOf = (profile: SeededProfile) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<TouchRow>`
      SELECT kind, event_type, anonymous_id, session_id, customer_id, join_method, channel, source, medium,
             campaign_name, click_id_kind, click_id, url, path, referrer_domain, device, browser, os, country, city,
             payload
      FROM touches WHERE profile_id = ${profile.profileId} ORDER BY received_at, id`)

const replayJobsOf = (profile: SeededProfile) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ id: string; reason: string; state: string }>`
      SELECT id::text AS id, reason, state FROM work_jobs
      WHERE profile_id = ${profile.profileId} AND kind = 'attribution_replay' ORDER BY created_at, id`)

/** Replays stay queued (no worker claims them), so the coalescing is observable. */
const workerOff = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(serveApp(testSettings({ baseUrl: BASE_URL })).pipe(Layer.provide(workerOff)), { timeout: "60 seconds", excludeTestServices: true })("web tracker", (it) => {
  describe("tracking keys", () => {
    it.effect("POST is idempotent by natural key: 201 with a new svc_pub_ key, then 200 with the same one; GET lists it", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"] })
        const first = yield* send("/api/v1/tracking/keys", bearer(key), "POST")
        assert.strictEqual(first.status, 201)
        assert.strictEqual(first.json.meta.created, true)
        const created = first.json.data
        assert.isTrue(isWellFormed(created.key, CredentialPrefix.trackingKey))
        assert.strictEqual(created.profile_id, profile.profileId)
        assert.strictEqual(created.status, "active")
        assert.strictEqual(created.revoked_at, null)
        const second = yield* send("/api/v1/tracking/keys", bearer(key), "POST")
        assert.strictEqual(second.status, 200)
        assert.strictEqual(second.json.meta.created, false)
        assert.deepStrictEqual(second.json.data, created)

        // analytics:read alone reads the list (scopeMode any), but cannot create.
        const { key: reader } = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
        const list = yield* send("/api/v1/tracking/keys", bearer(reader))
        assert.strictEqual(list.status, 200)
        assert.deepStrictEqual(list.json.data, [created])
        assert.deepStrictEqual(list.json.pagination, { has_next: false, cursor: null })
        const refused = yield* send("/api/v1/tracking/keys", bearer(reader), "POST")
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        const { key: neither } = yield* seedApiKey(profile, { scopes: ["campaigns:read"] })
        assert.strictEqual((yield* send("/api/v1/tracking/keys", bearer(neither))).status, 403)

        const sql = yield* SqlClient
        const rows = yield* sql<{ n: number; audits: number }>`
          SELECT (SELECT count(*)::int FROM tracking_keys WHERE profile_id = ${profile.profileId}) AS n,
                 (SELECT count(*)::int FROM audit_events WHERE profile_id = ${profile.profileId}
                    AND action = 'tracking_key.created') AS audits`
        assert.deepStrictEqual(rows[0], { n: 1, audits: 1 })
      }))

    it.effect("concurrent POSTs create exactly one key: one 201, the rest 200 with the same key", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"] })
        const answers = yield* Effect.all(
          Array.from({ length: 6 }, () => send("/api/v1/tracking/keys", bearer(key), "POST")),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(answers.map((answer) => answer.status).sort(), [200, 200, 200, 200, 200, 201])
        assert.strictEqual(new Set(answers.map((answer) => answer.json.data.key)).size, 1)
        const sql = yield* SqlClient
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM tracking_keys WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(rows[0]?.n, 1)
      }))

    it.effect("a person's console session manages keys on ?profile_id= (CSRF token on writes)", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* seedMemberSession(profile, "owner")
        const path = `/api/v1/tracking/keys?profile_id=${profile.profileId}`
        assert.strictEqual((yield* send(path, { cookie: owner.cookie }, "POST")).status, 403)
        const created = yield* send(path, owner.headers, "POST")
        assert.strictEqual(created.status, 201)
        const listed = yield* send(path, owner.headers)
        assert.deepStrictEqual(listed.json.data.map((key: { id: string }) => key.id), [created.json.data.id])
      }))

    it.effect("DELETE revokes at once (the collector refuses the key); a repeat answers the revoked key; POST then mints a new one", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const revoked = yield* send(`/api/v1/tracking/keys/${tracked.keyId}`, tracked.auth, "DELETE")
        assert.strictEqual(revoked.status, 200)
        assert.strictEqual(revoked.json.data.status, "revoked")
        assert.isString(revoked.json.data.revoked_at)
        const again = yield* send(`/api/v1/tracking/keys/${tracked.keyId}`, tracked.auth, "DELETE")
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.json.data, revoked.json.data)
        assert.deepStrictEqual((yield* send("/api/v1/tracking/keys", tracked.auth)).json.data, [])

        const refused = yield* collect(event(tracked.trackingKey))
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.json.error.code, "unauthorized")
        assert.lengthOf(yield* touchesOf(tracked.profile), 0)

        const fresh = yield* send("/api/v1/tracking/keys", tracked.auth, "POST")
        assert.strictEqual(fresh.status, 201)
        assert.notStrictEqual(fresh.json.data.key, tracked.trackingKey)
        const sql = yield* SqlClient
        const audits = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM audit_events WHERE profile_id = ${tracked.profile.profileId} AND action = 'tracking_key.revoked'`
        assert.strictEqual(audits[0]?.n, 1, "the repeat is not audited")
      }))

    it.effect("another profile's key, an unknown id and a malformed id: one identical 404, nothing revoked", () =>
      Effect.gen(function*() {
        const mine = yield* trackedProfile()
        const theirs = yield* trackedProfile()
        const answers = []
        for (const id of [theirs.keyId, crypto.randomUUID(), "nope"]) {
          const response = yield* send(`/api/v1/tracking/keys/${id}`, mine.auth, "DELETE")
          assert.strictEqual(response.status, 404)
          assert.strictEqual(response.json.error.code, "not_found")
          answers.push(withoutRequestId(response.text))
        }
        assert.strictEqual(new Set(answers).size, 1)
        assert.lengthOf((yield* send("/api/v1/tracking/keys", theirs.auth)).json.data, 1)
      }))
  })

  describe("settings", () => {
    it.effect("GET answers the defaults; PATCH normalizes origins and queues one full replay, coalesced while it waits", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"] })
        const defaults = yield* send("/api/v1/tracking/settings", bearer(key))
        assert.strictEqual(defaults.status, 200)
        assert.deepStrictEqual(defaults.json.data, {
          allowed_origins: [],
          capture_click_ids: true,
          cookie_domain: null,
          respect_do_not_track: false,
          allow_server_side: false,
          collector_url: `${BASE_URL}/t/collect`,
          updated_at: null
        })
        // The defaults sent back change nothing: no replay, still never updated.
        const unchanged = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { capture_click_ids: true, allowed_origins: [] })
        assert.strictEqual(unchanged.status, 200)
        assert.deepStrictEqual(unchanged.json.meta, { replay_job_id: null, changed: false })
        assert.deepStrictEqual(unchanged.json.data, defaults.json.data)
        assert.lengthOf(yield* replayJobsOf(profile), 0)
        const first = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", {
          allowed_origins: ["https://Shop.Example.com/", "http://localhost:3000", "https://shop.example.com"],
          cookie_domain: ".Example.com"
        })
        assert.strictEqual(first.status, 200)
        assert.deepStrictEqual(first.json.data.allowed_origins, ["https://shop.example.com", "http://localhost:3000"])
        assert.strictEqual(first.json.data.cookie_domain, ".example.com")
        assert.isString(first.json.data.updated_at)
        assert.strictEqual(first.json.meta.changed, true)
        const jobId = first.json.meta.replay_job_id
        assert.match(jobId, /^[0-9a-f-]{36}$/)
        assert.deepStrictEqual(yield* replayJobsOf(profile), [{ id: jobId, reason: "tracking_settings_changed", state: "queued" }])

        // A second change while the replay still waits joins it.
        const second = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { capture_click_ids: false })
        assert.strictEqual(second.json.meta.replay_job_id, jobId)
        assert.strictEqual(second.json.data.capture_click_ids, false)
        assert.deepStrictEqual(second.json.data.allowed_origins, ["https://shop.example.com", "http://localhost:3000"])
        assert.lengthOf(yield* replayJobsOf(profile), 1)

        // The same values again change nothing and queue nothing.
        const same = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", {
          capture_click_ids: false,
          allowed_origins: ["https://shop.example.com", "http://localhost:3000"]
        })
        assert.strictEqual(same.status, 200)
        assert.deepStrictEqual(same.json.meta, { replay_job_id: null, changed: false })

        // Once a runner has claimed the replay, a change queues a new one.
        const sql = yield* SqlClient
        yield* sql`UPDATE work_jobs SET state = 'running', started_at = now() WHERE id = ${jobId}`
        const third = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { respect_do_not_track: true })
        assert.notStrictEqual(third.json.meta.replay_job_id, jobId)
        assert.lengthOf(yield* replayJobsOf(profile), 2)
        assert.deepStrictEqual((yield* send("/api/v1/tracking/settings", bearer(key))).json.data, third.json.data)
        const audits = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM audit_events WHERE profile_id = ${profile.profileId} AND action = 'tracking_settings.updated'`
        assert.strictEqual(audits[0]?.n, 3)
      }))

    it.effect("invalid settings: 400 validation_error naming the field; nothing written, nothing queued", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"] })
        const plainHttp = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { allowed_origins: ["http://shop.example.com"] })
        assert.strictEqual(plainHttp.status, 400)
        assert.strictEqual(plainHttp.json.error.code, "validation_error")
        assert.include(plainHttp.json.error.message, "body.allowed_origins.0")
        const withPath = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { allowed_origins: ["https://shop.example.com/cart"] })
        assert.strictEqual(withPath.status, 400)
        const domain = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { cookie_domain: "not a domain" })
        assert.strictEqual(domain.status, 400)
        assert.include(domain.json.error.message, "body.cookie_domain")
        assert.lengthOf(yield* replayJobsOf(profile), 0)
        assert.strictEqual((yield* send("/api/v1/tracking/settings", bearer(key))).json.data.updated_at, null)
      }))

    it.effect("settings need tracking:write: analytics:read alone gets 403", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
        const response = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { capture_click_ids: false })
        assert.strictEqual(response.status, 403)
        assert.strictEqual(response.json.error.code, "insufficient_scope")
      }))
  })

  describe("snippet", () => {
    it.effect("application/javascript that posts only to the service's own collector, with the key and the documented behaviour", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile({ settings: { cookie_domain: ".example.com" } })
        const response = yield* send("/api/v1/tracking/snippet", tracked.auth)
        assert.strictEqual(response.status, 200)
        assert.match(response.headers.get("content-type") ?? "", /^application\/javascript/)
        const script = response.text
        assert.include(script, JSON.stringify(tracked.trackingKey))
        assert.include(script, JSON.stringify(`${BASE_URL}/t/collect`))
        assert.include(script, JSON.stringify(".example.com"))
        for (const piece of ["svc_aid", "SameSite=Lax", "Secure", "localStorage", "sendBeacon", "keepalive", "pushState", "replaceState", "popstate"]) {
          assert.include(script, piece)
        }
        for (const clickId of ["gclid", "gbraid", "wbraid", "fbclid", "ttclid", "msclkid", "utm_source"]) assert.include(script, clickId)
        const urls = script.match(/https?:\/\/[^\s"'`)]+/g) ?? []
        assert.isAbove(urls.length, 0)
        for (const url of urls) assert.isTrue(url.startsWith(BASE_URL), `${url} is not the service's origin`)
        assert.notInclude(script, ADPLATFORM_PIXEL_LOADER_URL)
        // The script parses as JavaScript.
        assert.doesNotThrow(() => new Function(script))

        // analytics:read reads it too; a session names the profile.
        const profile = tracked.profile
        const { key: reader } = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
        assert.strictEqual((yield* send(`/api/v1/tracking/snippet?key=${tracked.trackingKey}`, bearer(reader))).status, 200)
      }))

    it.effect("?bundle=adplatform_pixel appends the pixel loader, its only third-party request; bad parameters are 400, a foreign key 404", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const bundled = yield* send("/api/v1/tracking/snippet?bundle=adplatform_pixel&pixel_id=123456789012", tracked.auth)
        assert.strictEqual(bundled.status, 200)
        assert.include(bundled.text, ADPLATFORM_PIXEL_LOADER_URL)
        assert.include(bundled.text, "\"123456789012\"")
        const thirdParty = (bundled.text.match(/https?:\/\/[^\s"'`)]+/g) ?? []).filter((url) => !url.startsWith(BASE_URL))
        assert.deepStrictEqual([...new Set(thirdParty)], [ADPLATFORM_PIXEL_LOADER_URL])
        assert.doesNotThrow(() => new Function(bundled.text))

        for (const query of ["bundle=adplatform_pixel", "bundle=other&pixel_id=123456789", "pixel_id=123456789", "bundle=adplatform_pixel&pixel_id=abc"]) {
          const response = yield* send(`/api/v1/tracking/snippet?${query}`, tracked.auth)
          assert.strictEqual(response.status, 400, query)
          assert.strictEqual(response.json.error.code, "invalid_parameter")
        }
        const other = yield* trackedProfile()
        const foreign = yield* send(`/api/v1/tracking/snippet?key=${other.trackingKey}`, tracked.auth)
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.json.error.code, "not_found")
      }))
  })

  describe("GET /t/tracker.js", () => {
    it.effect("serves the snippet's script publicly by tracking key, cacheable, 304 on a matching ETag; unknown or revoked keys 404", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const snippet = yield* send(`/api/v1/tracking/snippet?key=${tracked.trackingKey}`, tracked.auth)
        const script = yield* call(`/t/tracker.js?key=${tracked.trackingKey}`)
        assert.strictEqual(script.status, 200, script.text)
        assert.strictEqual(script.text, snippet.text)
        assert.match(script.headers.get("content-type") ?? "", /^application\/javascript/)
        assert.strictEqual(script.headers.get("cache-control"), "public, max-age=300")
        assert.strictEqual(script.headers.get("x-content-type-options"), "nosniff")
        const etag = script.headers.get("etag")
        assert.isString(etag)
        const cached = yield* call(`/t/tracker.js?key=${tracked.trackingKey}`, { headers: { "if-none-match": etag ?? "" } })
        assert.strictEqual(cached.status, 304)
        const bundled = yield* call(`/t/tracker.js?key=${tracked.trackingKey}&bundle=adplatform_pixel&pixel_id=123456`)
        assert.include(bundled.text, ADPLATFORM_PIXEL_LOADER_URL)
        const badBundle = yield* call(`/t/tracker.js?key=${tracked.trackingKey}&bundle=other`)
        assert.strictEqual(badBundle.status, 400)
        for (const key of ["nope", `svc_pub_${"a".repeat(40)}`]) {
          const unknown = yield* call(`/t/tracker.js?key=${key}`)
          assert.strictEqual(unknown.status, 404, key)
          assert.strictEqual(unknown.json.error.code, "not_found")
        }
        assert.strictEqual((yield* send(`/api/v1/tracking/keys/${tracked.keyId}`, tracked.auth, "DELETE")).status, 200)
        const revoked = yield* call(`/t/tracker.js?key=${tracked.trackingKey}`)
        assert.strictEqual(revoked.status, 404)
      }))
  })

  describe("collector", () => {
    it.effect("an accepted event: 204 with CORS for the origin, one web touch with parsed agent, channel and click id kind", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const response = yield* collect(event(tracked.trackingKey, { properties: { title: "Landing" } }), {
          "cf-ipcountry": "es",
          "cf-ipcity": "Madrid"
        })
        assert.strictEqual(response.status, 204)
        assert.strictEqual(response.text, "")
        assert.strictEqual(response.headers.get("access-control-allow-origin"), ORIGIN)
        const touches = yield* touchesOf(tracked.profile)
        assert.lengthOf(touches, 1)
        assert.deepStrictEqual(touches[0], {
          kind: "web_touch",
          event_type: "page_view",
          anonymous_id: "anon_0123456789",
          session_id: "sess_0123456789",
          customer_id: null,
          join_method: null,
          channel: "paid_search",
          source: "google",
          medium: "cpc",
          campaign_name: "Winter",
          click_id_kind: "gclid",
          click_id: "abc",
          // The click id value and the fragment never reach the stored URL.
          url: "https://shop.example.com/landing?utm_source=google&utm_medium=cpc&utm_campaign=Winter",
          path: "/landing",
          referrer_domain: "google.com",
          device: "desktop",
          browser: "Chrome",
          os: "Windows",
          country: "ES",
          city: "Madrid",
          payload: {
            utm: { utm_source: "google", utm_medium: "cpc", utm_campaign: "Winter" },
            properties: { title: "Landing" }
          }
        })
      }))

    it.effect("text/plain (what sendBeacon sends); a later SPA page keeps the landing's channel; a bound anonymous id joins its customer", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const sql = yield* SqlClient
        const customerId = crypto.randomUUID()
        yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${customerId}, ${tracked.profile.profileId}, 'c-1')`
        yield* sql`
          INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
          VALUES (${crypto.randomUUID()}, ${tracked.profile.profileId}, ${customerId}, 'anonymous_id', 'anon_bound_0001')`
        const landing = yield* collect(
          JSON.stringify(event(tracked.trackingKey, {
            anonymous_id: "anon_bound_0001",
            url: "https://shop.example.com/?utm_source=facebook&utm_medium=paid_social&fbclid=F123",
            referrer: "https://l.facebook.com/"
          })),
          { "content-type": "text/plain;charset=UTF-8", "user-agent": IPHONE }
        )
        assert.strictEqual(landing.status, 204)
        const spa = yield* collect(
          JSON.stringify(event(tracked.trackingKey, {
            anonymous_id: "anon_bound_0001",
            url: "https://shop.example.com/pricing",
            referrer: "https://shop.example.com/?utm_source=facebook&utm_medium=paid_social",
            attribution: { utm_source: "facebook", utm_medium: "paid_social", fbclid: "F123" },
            landing_referrer: "https://l.facebook.com/"
          })),
          { "content-type": "text/plain", "user-agent": IPHONE }
        )
        assert.strictEqual(spa.status, 204)
        const touches = yield* touchesOf(tracked.profile)
        assert.lengthOf(touches, 2)
        for (const touch of touches) {
          assert.strictEqual(touch.channel, "paid_social")
          assert.strictEqual(touch.source, "facebook")
          assert.strictEqual(touch.click_id_kind, "fbclid")
          assert.strictEqual(touch.customer_id, customerId)
          assert.strictEqual(touch.join_method, "anonymous_id")
          assert.strictEqual(touch.device, "mobile")
          assert.strictEqual(touch.os, "iOS")
          assert.strictEqual(touch.browser, "Safari")
          assert.strictEqual(touch.referrer_domain, "l.facebook.com")
          assert.strictEqual(touch.country, null)
        }
        assert.strictEqual(touches[1]?.path, "/pricing")
      }))

    it.effect("an origin not allowed: 403 insufficient_scope; no Origin: 403 unless the profile allows server-side events", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const wrong = yield* collect(event(tracked.trackingKey), { origin: "https://evil.example.net" })
        assert.strictEqual(wrong.status, 403)
        assert.strictEqual(wrong.json.error.code, "insufficient_scope")
        assert.strictEqual(wrong.json.error.reason, "origin_not_allowed")
        const nullOrigin = yield* collect(event(tracked.trackingKey), { origin: "null" })
        assert.strictEqual(nullOrigin.status, 403)
        const serverSide = yield* call("/t/collect", {
          method: "POST",
          headers: { "content-type": "application/json", "user-agent": CHROME },
          body: JSON.stringify(event(tracked.trackingKey))
        })
        assert.strictEqual(serverSide.status, 403)
        assert.strictEqual(serverSide.json.error.reason, "origin_required")
        assert.lengthOf(yield* touchesOf(tracked.profile), 0)

        assert.strictEqual((yield* send("/api/v1/tracking/settings", tracked.auth, "PATCH", { allow_server_side: true })).status, 200)
        const allowed = yield* call("/t/collect", {
          method: "POST",
          headers: { "content-type": "application/json", "user-agent": CHROME },
          body: JSON.stringify(event(tracked.trackingKey))
        })
        assert.strictEqual(allowed.status, 204)
        assert.strictEqual(allowed.headers.get("access-control-allow-origin"), null)
        assert.lengthOf(yield* touchesOf(tracked.profile), 1)
      }))

    it.effect("an unknown, malformed or revoked tracking key: 401 unauthorized", () =>
      Effect.gen(function*() {
        for (const key of [mintSecret(CredentialPrefix.trackingKey), "svc_pub_nope", "anything"]) {
          const response = yield* collect(event(key))
          assert.strictEqual(response.status, 401, key)
          assert.strictEqual(response.json.error.code, "unauthorized")
        }
      }))

    it.effect("bots are answered 204 but dropped, and counted", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        for (const agent of [GOOGLEBOT, "curl/8.5.0", ""]) {
          const response = yield* collect(event(tracked.trackingKey), { "user-agent": agent })
          assert.strictEqual(response.status, 204, agent)
        }
        assert.lengthOf(yield* touchesOf(tracked.profile), 0)
        const sql = yield* SqlClient
        const drops = yield* sql<{ reason: string; count: string }>`
          SELECT reason, count::text AS count FROM tracking_drops WHERE profile_id = ${tracked.profile.profileId}`
        assert.deepStrictEqual(drops.map((row) => ({ ...row })), [{ reason: "bot", count: "3" }])
      }))

    it.effect("one address sends at most 600 events a minute under one tracking key; the next is 429 with Retry-After", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const other = yield* trackedProfile()
        // The bucket holds 600 and gives one back every 100 ms (a minute's worth over the minute):
        // a burst of 600 passes, and on a loaded machine, where the burst takes seconds, what was
        // given back meanwhile passes too. So: the burst, then one at a time until the first 429,
        // which must come within the burst plus what the elapsed time gave back.
        const started = Date.now()
        // Bots are metered too (their events are dropped after the bucket), which keeps this test free of writes.
        const statuses = yield* Effect.forEach(
          Array.from({ length: COLLECT_PER_ADDRESS_PER_MINUTE }, () => undefined),
          () => Effect.map(collect(event(tracked.trackingKey), { "user-agent": GOOGLEBOT }), (response) => response.status),
          { concurrency: 8 }
        )
        assert.deepStrictEqual([...new Set(statuses)], [204])
        let accepted = statuses.length
        // Eight at a time, as the burst: one at a time could be slower than the bucket refills.
        const bot = collect(event(tracked.trackingKey), { "user-agent": GOOGLEBOT })
        let over: Effect.Success<typeof bot> | undefined
        while (over === undefined && accepted < 2 * COLLECT_PER_ADDRESS_PER_MINUTE) {
          const answers = yield* Effect.all(Array.from({ length: 8 }, () => bot), { concurrency: 8 })
          accepted += answers.filter((answer) => answer.status === 204).length
          over = answers.find((answer) => answer.status !== 204)
        }
        assert.isDefined(over, `no 429 after ${accepted} events`)
        if (over === undefined) return
        const givenBack = Math.ceil((Date.now() - started) / (60_000 / COLLECT_PER_ADDRESS_PER_MINUTE))
        assert.strictEqual(over.status, 429, over.text)
        assert.isAtMost(accepted, COLLECT_PER_ADDRESS_PER_MINUTE + givenBack)
        assert.strictEqual(over.json.error.code, "rate_limit_exceeded")
        assert.isAtLeast(Number(over.headers.get("retry-after")), 1)
        assert.lengthOf(yield* touchesOf(tracked.profile), 0)
        // Another tracking key from the same address has its own bucket.
        assert.strictEqual((yield* collect(event(other.trackingKey))).status, 204)
      }))

    it.effect("a body over 16 KB: 413 payload_too_large; malformed events: 400 validation_error naming the field", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const big = yield* collect(event(tracked.trackingKey, { properties: { blob: "x".repeat(17 * 1024) } }))
        assert.strictEqual(big.status, 413)
        assert.strictEqual(big.json.error.code, "payload_too_large")

        const { anonymous_id: _omitted, ...missing } = event(tracked.trackingKey)
        const noAnonymousId = yield* collect(missing)
        assert.strictEqual(noAnonymousId.status, 400)
        assert.strictEqual(noAnonymousId.json.error.code, "validation_error")
        assert.include(noAnonymousId.json.error.message, "body.anonymous_id")
        const badUrl = yield* collect(event(tracked.trackingKey, { url: "javascript:alert(1)" }))
        assert.strictEqual(badUrl.status, 400)
        assert.include(badUrl.json.error.message, "body.url")
        const future = yield* collect(event(tracked.trackingKey, { occurred_at: "2999-01-01T00:00:00Z" }))
        assert.strictEqual(future.status, 400)
        assert.include(future.json.error.message, "body.occurred_at")
        const notJson = yield* collect("{not json", { "content-type": "text/plain" })
        assert.strictEqual(notJson.status, 400)
        assert.strictEqual(notJson.json.error.code, "validation_error")
        const form = yield* collect("a=b", { "content-type": "application/x-www-form-urlencoded" })
        assert.strictEqual(form.status, 400)
        assert.lengthOf(yield* touchesOf(tracked.profile), 0)
      }))

    it.effect("the same event_id twice is stored once; occurred_at in the past is kept", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const at = new Date(Date.now() - 60 * 60 * 1000).toISOString()
        const body = event(tracked.trackingKey, { event_id: "evt_0123456789", occurred_at: at })
        assert.strictEqual((yield* collect(body)).status, 204)
        assert.strictEqual((yield* collect(body)).status, 204)
        const sql = yield* SqlClient
        const rows = yield* sql<{ at: string }>`
          SELECT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
          FROM touches WHERE profile_id = ${tracked.profile.profileId}`
        assert.deepStrictEqual(rows.map((row) => row.at), [at])
      }))

    it.effect("concurrent events, ten under one event_id among ten others, share commits: eleven stored, every one answered 204", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const same = event(tracked.trackingKey, { event_id: "evt_concurrent_same" })
        const bodies = Array.from({ length: 20 }, (_, i) =>
          i % 2 === 0 ? same : event(tracked.trackingKey, { event_id: `evt_concurrent_${String(i).padStart(4, "0")}` }))
        const answers = yield* Effect.all(bodies.map((body) => collect(body)), { concurrency: "unbounded" })
        assert.deepStrictEqual(answers.map((answer) => answer.status), bodies.map(() => 204))
        assert.lengthOf(yield* touchesOf(tracked.profile), 11)
      }))

    it.effect("capture_click_ids off: no click id kept, the UTMs decide; Do-Not-Track honoured when asked", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile({ settings: { capture_click_ids: false, respect_do_not_track: true } })
        assert.strictEqual((yield* collect(event(tracked.trackingKey, {
          url: "https://shop.example.com/?utm_source=newsletter&utm_medium=email&gclid=abc"
        }))).status, 204)
        assert.strictEqual((yield* collect(event(tracked.trackingKey), { dnt: "1" })).status, 204)
        assert.strictEqual((yield* collect(event(tracked.trackingKey), { "sec-gpc": "1" })).status, 204)
        const touches = yield* touchesOf(tracked.profile)
        assert.lengthOf(touches, 1)
        assert.strictEqual(touches[0]?.channel, "email")
        assert.strictEqual(touches[0]?.click_id_kind, null)
        assert.strictEqual(touches[0]?.click_id, null)
        assert.notInclude(touches[0]?.url ?? "", "gclid")
      }))

    it.effect("CORS pre-flight: 204 with the allow headers for an allowed origin, 403 for any other", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile({ origins: ["https://preflight.example.com"] })
        const preflight = (origin: string, query = "") =>
          call(`/t/collect${query}`, {
            method: "OPTIONS",
            headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" }
          })
        const allowed = yield* preflight("https://preflight.example.com")
        assert.strictEqual(allowed.status, 204)
        assert.strictEqual(allowed.headers.get("access-control-allow-origin"), "https://preflight.example.com")
        assert.include(allowed.headers.get("access-control-allow-methods") ?? "", "POST")
        assert.include(allowed.headers.get("access-control-allow-headers") ?? "", "content-type")
        const withKey = yield* preflight("https://preflight.example.com", `?key=${tracked.trackingKey}`)
        assert.strictEqual(withKey.status, 204)
        const otherKey = yield* trackedProfile({ origins: ["https://someone-else.example.com"] })
        assert.strictEqual((yield* preflight("https://preflight.example.com", `?key=${otherKey.trackingKey}`)).status, 403)
        const refused = yield* preflight("https://nobody-allows-this.example.com")
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual(refused.headers.get("access-control-allow-origin"), null)
      }))
  })
})
