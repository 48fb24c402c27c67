/**
 * The tracker's installation and diagnostics (decision 0034): installers, custom collector
 * domains verified over real DNS (a UDP server in the test process), install verification, the
 * event feed, ops, origin and quality.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { request } from "node:http"
import { call, serveApp, testSettings, TestServer, withoutRequestId } from "../support/app.ts"
import { DnsServer, DnsServerLayer } from "../support/dns-server.ts"
import { eventually } from "../support/eventually.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const BASE_URL = "http://svc.test"
const COLLECTOR_HOST = "svc.test"
const ORIGIN = "https://shop.example.com"
const CHROME =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
const GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const send = (path: string, headers: Record<string, string>, method = "GET", body?: unknown) =>
  call(path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

interface Tracked {
  readonly profile: SeededProfile
  readonly auth: Record<string, string>
  readonly trackingKey: string
}

/** A profile with a tracking:write + analytics:read key, its tracking key, and ORIGIN allowed. */
const trackedProfile = (settings: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write", "analytics:read"], rateLimitPerMinute: 1000 })
    const auth = bearer(key)
    const created = yield* send("/api/v1/tracking/keys", auth, "POST")
    assert.strictEqual(created.status, 201)
    const patched = yield* send("/api/v1/tracking/settings", auth, "PATCH", { allowed_origins: [ORIGIN], ...settings })
    assert.strictEqual(patched.status, 200)
    return { profile, auth, trackingKey: created.json.data.key as string } satisfies Tracked
  })

const event = (trackingKey: string, overrides: Record<string, unknown> = {}) => ({
  tracking_key: trackingKey,
  anonymous_id: "anon_0123456789",
  session_id: "sess_0123456789",
  type: "page_view",
  url: "https://shop.example.com/landing",
  referrer: null,
  ...overrides
})

const collect = (body: unknown, headers: Record<string, string> = {}) =>
  call("/t/collect", {
    method: "POST",
    headers: { "content-type": "application/json", origin: ORIGIN, "user-agent": CHROME, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

/** A collector call with a chosen `Host` header (fetch does not let a caller set it). */
const collectOnHost = (host: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const target = new URL(url)
    const payload = JSON.stringify(body)
    return yield* Effect.callback<{ readonly status: number; readonly text: string }>((resume) => {
      const outgoing = request({
        host: target.hostname,
        port: target.port,
        path: "/t/collect",
        method: "POST",
        headers: {
          host,
          "content-type": "text/plain",
          "content-length": Buffer.byteLength(payload),
          origin: ORIGIN,
          "user-agent": CHROME,
          ...headers
        }
      }, (response) => {
        let text = ""
        response.setEncoding("utf8")
        response.on("data", (chunk: string) => (text += chunk))
        response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, text })))
      })
      outgoing.on("error", (error) => resume(Effect.die(error)))
      outgoing.end(payload)
    })
  })

const touchCount = (profile: SeededProfile) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ n: number }>`SELECT count(*)::int AS n FROM touches WHERE profile_id = ${profile.profileId}`,
      (rows) => rows[0]?.n ?? 0
    ))

const uniqueHost = (label: string) => `${label}-${crypto.randomUUID().slice(0, 8)}.shop-one.com`

const TestLayer = Layer.unwrap(
  Effect.map(DnsServer, (dns) =>
    serveApp(testSettings({ baseUrl: BASE_URL, dnsServers: [`127.0.0.1:${dns.port}`] })))
).pipe(Layer.provideMerge(DnsServerLayer))

layer(TestLayer, { timeout: "90 seconds", excludeTestServices: true })("tracker installation and diagnostics", (it) => {
  describe("installers", () => {
    it.effect("GET installers/gtm: a container export (format 2) with one Custom HTML tag on an all-pages trigger carrying the snippet", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const response = yield* send("/api/v1/tracking/installers/gtm", tracked.auth)
        assert.strictEqual(response.status, 200)
        assert.match(response.headers.get("content-type") ?? "", /^application\/json/)
        const container = response.json
        assert.strictEqual(container.exportFormatVersion, 2)
        assert.match(container.exportTime, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
        const version = container.containerVersion
        assert.lengthOf(version.tag, 1)
        assert.lengthOf(version.trigger, 1)
        const [tag] = version.tag
        const [trigger] = version.trigger
        assert.strictEqual(tag.type, "html")
        assert.deepStrictEqual(tag.firingTriggerId, [trigger.triggerId])
        assert.strictEqual(trigger.type, "PAGEVIEW")
        assert.notProperty(trigger, "filter", "no filter: every page")
        const html: string = tag.parameter.find((p: { key: string }) => p.key === "html").value
        assert.match(html, /^<script>\n[\s\S]*<\/script>$/)
        assert.include(html, JSON.stringify(tracked.trackingKey))
        assert.include(html, JSON.stringify(`${BASE_URL}/t/collect`))
        // The tag manager reads {{name}} as a variable reference: the snippet has none.
        assert.notInclude(html, "{{")
        const script = html.replace(/^<script>\n/, "").replace(/<\/script>$/, "")
        assert.doesNotThrow(() => new Function(script))
        assert.notInclude(JSON.stringify(container).toLowerCase(), "google")

        // analytics:read reads it too; another scope does not; ?key= must be the profile's.
        const { key: reader } = yield* seedApiKey(tracked.profile, { scopes: ["analytics:read"] })
        assert.strictEqual((yield* send(`/api/v1/tracking/installers/gtm?key=${tracked.trackingKey}`, bearer(reader))).status, 200)
        const { key: other } = yield* seedApiKey(tracked.profile, { scopes: ["campaigns:read"] })
        const refused = yield* send("/api/v1/tracking/installers/gtm", bearer(other))
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        const foreign = yield* trackedProfile()
        const notMine = yield* send(`/api/v1/tracking/installers/gtm?key=${foreign.trackingKey}`, tracked.auth)
        assert.strictEqual(notMine.status, 404)
        // A profile without a live key: 404.
        const bare = yield* seedProfile()
        const { key: bareKey } = yield* seedApiKey(bare, { scopes: ["tracking:write"] })
        assert.strictEqual((yield* send("/api/v1/tracking/installers/gtm", bearer(bareKey))).status, 404)
        assert.strictEqual((yield* send("/api/v1/tracking/installers/shopify-pixel", bearer(bareKey))).status, 404)
      }))

    it.effect("GET installers/shopify-pixel: a web pixel that posts page_viewed and checkout_completed to the collector with the key", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const response = yield* send("/api/v1/tracking/installers/shopify-pixel", tracked.auth)
        assert.strictEqual(response.status, 200)
        assert.match(response.headers.get("content-type") ?? "", /^application\/javascript/)
        const script = response.text
        assert.include(script, JSON.stringify(tracked.trackingKey))
        assert.include(script, "analytics.subscribe(\"page_viewed\"")
        assert.include(script, "analytics.subscribe(\"checkout_completed\"")

        // Run it in a stand-in of the platform's sandbox and capture what it sends.
        const handlers = new Map<string, (event: unknown) => void>()
        const sent: Array<{ url: string; init: { body: string; headers: Record<string, string> } }> = []
        const sandbox = {
          analytics: { subscribe: (name: string, handler: (event: unknown) => void) => void handlers.set(name, handler) },
          browser: {
            cookie: { get: () => Promise.resolve("") },
            sessionStorage: (() => {
              const store = new Map<string, string>()
              return {
                getItem: (k: string) => Promise.resolve(store.get(k) ?? null),
                setItem: (k: string, v: string) => Promise.resolve(void store.set(k, v))
              }
            })()
          },
          fetch: (url: string, init: { body: string; headers: Record<string, string> }) => {
            sent.push({ url, init })
            return Promise.resolve({})
          }
        }
        new Function("analytics", "browser", "fetch", script)(sandbox.analytics, sandbox.browser, sandbox.fetch)
        assert.deepStrictEqual([...handlers.keys()], ["page_viewed", "checkout_completed"])
        const context = {
          document: {
            location: { href: "https://shop.example.com/products/tea?utm_source=newsletter&utm_medium=email" },
            referrer: ""
          }
        }
        handlers.get("page_viewed")?.({ id: "sh-0001-page", clientId: "c0ffee00-1111-2222-3333-444455556666", context })
        // Events of one visit arrive apart: the pixel stores the landing before it sends the page
        // view, so once that request is out the next event reads the stored landing.
        yield* eventually(Effect.sync(() => sent.length), (n) => n >= 1, { what: "the page view to be sent", within: "5 seconds", every: "5 millis" })
        handlers.get("checkout_completed")?.({
          id: "sh-0002-checkout",
          clientId: "c0ffee00-1111-2222-3333-444455556666",
          context: { document: { location: { href: "https://shop.example.com/thank-you" }, referrer: "" } },
          data: { checkout: { totalPrice: { amount: 42.5, currencyCode: "EUR" }, order: { id: "gid://shop/Order/77" } } }
        })
        yield* eventually(Effect.sync(() => sent.length), (n) => n >= 2, { what: "the checkout to be sent", within: "5 seconds", every: "5 millis" })
        assert.lengthOf(sent, 2)
        for (const request of sent) {
          assert.strictEqual(request.url, `${BASE_URL}/t/collect`)
          assert.strictEqual(request.init.headers["content-type"], "text/plain")
        }
        const page = JSON.parse(sent[0]?.init.body ?? "{}")
        const checkout = JSON.parse(sent[1]?.init.body ?? "{}")
        assert.deepInclude(page, {
          tracking_key: tracked.trackingKey,
          anonymous_id: "c0ffee00-1111-2222-3333-444455556666",
          type: "page_view",
          event_id: "sh-0001-page"
        })
        assert.deepStrictEqual(checkout.properties, { order_id: "gid://shop/Order/77", value: 42.5, currency: "EUR" })
        // The later page keeps the landing's tags.
        assert.deepStrictEqual(checkout.attribution, { utm_source: "newsletter", utm_medium: "email" })

        // The sandbox sends Origin: null, accepted only once the profile allows server-side senders.
        const sandboxed = { "content-type": "text/plain", origin: "null" }
        const refused = yield* collect(sent[0]?.init.body, sandboxed)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.reason, "origin_required")
        assert.strictEqual((yield* send("/api/v1/tracking/settings", tracked.auth, "PATCH", { allow_server_side: true })).status, 200)
        assert.strictEqual((yield* collect(sent[0]?.init.body, sandboxed)).status, 204)
        assert.strictEqual((yield* collect(sent[1]?.init.body, sandboxed)).status, 204)
        const sql = yield* SqlClient
        const rows = yield* sql<{ event_type: string; channel: string; collector_origin: string | null }>`
          SELECT event_type, channel, collector_origin FROM touches
          WHERE profile_id = ${tracked.profile.profileId} ORDER BY received_at, id`
        assert.deepStrictEqual(rows.map((row) => ({ ...row })), [
          { event_type: "page_view", channel: "email", collector_origin: null },
          { event_type: "checkout_completed", channel: "email", collector_origin: null }
        ])
      }))
  })

  describe("custom domains", () => {
    it.effect("register answers the CNAME and TXT records; verify: pending (what is missing) → verified over DNS; the snippet and the collector use the domain", () =>
      Effect.gen(function*() {
        const dns = yield* DnsServer
        const tracked = yield* trackedProfile()
        const hostname = uniqueHost("t")
        const created = yield* send("/api/v1/tracking/custom-domains", tracked.auth, "POST", { hostname: `${hostname.toUpperCase()}.` })
        assert.strictEqual(created.status, 201)
        assert.deepStrictEqual(created.json.meta, { created: true })
        const domain = created.json.data
        const token: string = domain.dns_records[1].value
        assert.match(token, /^svc-verify=[A-Za-z0-9]{32}$/)
        assert.deepStrictEqual({ ...domain, id: "", created_at: "" }, {
          id: "",
          profile_id: tracked.profile.profileId,
          hostname,
          status: "pending",
          active: false,
          dns_records: [
            { type: "CNAME", name: hostname, value: COLLECTOR_HOST },
            { type: "TXT", name: `_svc-verify.${hostname}`, value: token }
          ],
          missing: [],
          error: null,
          created_at: "",
          checked_at: null,
          verified_at: null
        })
        const again = yield* send("/api/v1/tracking/custom-domains", tracked.auth, "POST", { hostname })
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.json, { data: domain, meta: { created: false } })
        const listed = yield* send("/api/v1/tracking/custom-domains", tracked.auth)
        assert.deepStrictEqual(listed.json, { data: [domain], pagination: { has_next: false, cursor: null } })

        const verify = () => send(`/api/v1/tracking/custom-domains/${domain.id}/verify`, tracked.auth, "POST")
        // Nothing in DNS yet: pending, both missing.
        const nothing = yield* verify()
        assert.strictEqual(nothing.status, 200)
        assert.strictEqual(nothing.json.data.status, "pending")
        assert.strictEqual(nothing.json.data.active, false)
        assert.isString(nothing.json.data.checked_at)
        assert.deepStrictEqual(nothing.json.data.missing, [
          { type: "CNAME", name: hostname, expected: COLLECTOR_HOST, found: [] },
          { type: "TXT", name: `_svc-verify.${hostname}`, expected: token, found: [] }
        ])
        // A CNAME elsewhere and no TXT: both still missing, with what the CNAME answered.
        dns.set(hostname, { cname: "elsewhere.example.net" })
        const wrong = yield* verify()
        assert.deepStrictEqual(wrong.json.data.missing[0], {
          type: "CNAME",
          name: hostname,
          expected: COLLECTOR_HOST,
          found: ["elsewhere.example.net"]
        })
        // The right CNAME: only the TXT is missing.
        dns.set(hostname, { cname: `${COLLECTOR_HOST}.` })
        dns.set(`_svc-verify.${hostname}`, { txt: ["unrelated=1"] })
        const half = yield* verify()
        assert.strictEqual(half.json.data.status, "pending")
        assert.deepStrictEqual(half.json.data.missing, [
          { type: "TXT", name: `_svc-verify.${hostname}`, expected: token, found: ["unrelated=1"] }
        ])
        // Both records: verified and active.
        dns.set(`_svc-verify.${hostname}`, { txt: ["unrelated=1", token] })
        const verified = yield* verify()
        assert.strictEqual(verified.status, 200)
        assert.strictEqual(verified.json.data.status, "verified")
        assert.strictEqual(verified.json.data.active, true)
        assert.deepStrictEqual(verified.json.data.missing, [])
        assert.isString(verified.json.data.verified_at)
        assert.include(dns.questions, `CNAME ${hostname}`)
        assert.include(dns.questions, `TXT _svc-verify.${hostname}`)

        // The snippet, the installers, the settings and the origin now name the custom collector.
        const custom = `https://${hostname}/t/collect`
        const snippet = yield* send("/api/v1/tracking/snippet", tracked.auth)
        assert.include(snippet.text, JSON.stringify(custom))
        assert.notInclude(snippet.text, `${BASE_URL}/t/collect`)
        assert.include((yield* send("/api/v1/tracking/installers/gtm", tracked.auth)).text, JSON.stringify(JSON.stringify(custom)).slice(1, -1))
        assert.include((yield* send("/api/v1/tracking/installers/shopify-pixel", tracked.auth)).text, JSON.stringify(custom))
        assert.strictEqual((yield* send("/api/v1/tracking/settings", tracked.auth)).json.data.collector_url, custom)
        const origin = yield* send("/api/v1/tracking/origin", tracked.auth)
        assert.deepStrictEqual(origin.json.data, {
          collector_url: custom,
          default_collector_url: `${BASE_URL}/t/collect`,
          custom_domains: [{ id: domain.id, hostname, status: "verified", active: true, collector_url: custom }],
          allowed_origins: [ORIGIN],
          allow_server_side: false
        })

        // The collector accepts its own profile's events on the domain, and refuses another profile's key there.
        const accepted = yield* collectOnHost(hostname, event(tracked.trackingKey))
        assert.strictEqual(accepted.status, 204)
        assert.strictEqual(yield* touchCount(tracked.profile), 1)
        const other = yield* trackedProfile()
        const foreign = yield* collectOnHost(`${hostname}:443`, event(other.trackingKey))
        assert.strictEqual(foreign.status, 403)
        assert.strictEqual(JSON.parse(foreign.text).error.reason, "collector_host_not_allowed")
        assert.strictEqual(yield* touchCount(other.profile), 0)
        // A host nobody registered is served as before.
        assert.strictEqual((yield* collectOnHost(uniqueHost("unregistered"), event(other.trackingKey))).status, 204)

        const sql = yield* SqlClient
        const audits = yield* sql<{ action: string }>`
          SELECT action FROM audit_events WHERE profile_id = ${tracked.profile.profileId} AND target_kind = 'tracking_domain'
          ORDER BY occurred_at, id`
        assert.deepStrictEqual(audits.map((row) => row.action), [
          "tracking_domain.created",
          "tracking_domain.checked",
          "tracking_domain.checked",
          "tracking_domain.checked",
          "tracking_domain.checked"
        ])
      }))

    it.effect("a resolver timeout: failed with the resolver's error, an active domain keeps serving; records removed: pending, it stops", () =>
      Effect.gen(function*() {
        const dns = yield* DnsServer
        const tracked = yield* trackedProfile()
        const hostname = uniqueHost("edge")
        const domain = (yield* send("/api/v1/tracking/custom-domains", tracked.auth, "POST", { hostname })).json.data
        dns.set(hostname, { cname: COLLECTOR_HOST })
        dns.set(`_svc-verify.${hostname}`, { txt: [domain.dns_records[1].value] })
        const verify = () => send(`/api/v1/tracking/custom-domains/${domain.id}/verify`, tracked.auth, "POST")
        const verified = (yield* verify()).json.data
        assert.strictEqual(verified.status, "verified")
        // Served (and what the collector read about the host is now cached).
        assert.strictEqual((yield* collectOnHost(hostname, event(tracked.trackingKey))).status, 204)

        dns.silent(true)
        const started = Date.now()
        const timedOut = yield* verify().pipe(Effect.ensuring(Effect.sync(() => dns.silent(false))))
        assert.isBelow(Date.now() - started, 5_000, "a look-up is bounded by the 3 s timeout")
        assert.strictEqual(timedOut.status, 200)
        assert.strictEqual(timedOut.json.data.status, "failed")
        assert.include(timedOut.json.data.error, "ETIMEOUT")
        assert.deepStrictEqual(timedOut.json.data.missing, [])
        assert.strictEqual(timedOut.json.data.active, true)
        assert.strictEqual(timedOut.json.data.verified_at, verified.verified_at)
        assert.include((yield* send("/api/v1/tracking/snippet", tracked.auth)).text, `https://${hostname}/t/collect`)

        dns.remove(`_svc-verify.${hostname}`)
        const gone = yield* verify()
        assert.strictEqual(gone.json.data.status, "pending")
        assert.strictEqual(gone.json.data.active, false)
        assert.strictEqual(gone.json.data.verified_at, null)
        assert.strictEqual(gone.json.data.error, null)
        assert.deepStrictEqual(gone.json.data.missing.map((record: { type: string }) => record.type), ["TXT"])
        const snippet = (yield* send("/api/v1/tracking/snippet", tracked.auth)).text
        assert.include(snippet, JSON.stringify(`${BASE_URL}/t/collect`))
        // A registered domain that does not serve refuses the collector at once, even for its own profile.
        const refused = yield* collectOnHost(hostname, event(tracked.trackingKey))
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(yield* touchCount(tracked.profile), 1)
      }))

    it.effect("invalid hostnames are 400 validation_error; another profile's hostname is 409 invalid_state", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        for (
          const hostname of [
            "203.0.113.7",
            "2001:db8::1",
            "svc.test",
            "t.svc.test",
            "localhost",
            "shop.local",
            "intranet",
            "https://t.shop.example.com/",
            "t.shop.example.com:8443",
            "bad_label.example.com",
            "-bad.example.com",
            "t.example.123",
            ""
          ]
        ) {
          const response = yield* send("/api/v1/tracking/custom-domains", tracked.auth, "POST", { hostname })
          assert.strictEqual(response.status, 400, hostname)
          assert.strictEqual(response.json.error.code, "validation_error", hostname)
          assert.include(response.json.error.message, "body.hostname", hostname)
        }
        assert.deepStrictEqual((yield* send("/api/v1/tracking/custom-domains", tracked.auth)).json.data, [])

        const hostname = uniqueHost("shared")
        assert.strictEqual((yield* send("/api/v1/tracking/custom-domains", tracked.auth, "POST", { hostname })).status, 201)
        const other = yield* trackedProfile()
        const taken = yield* send("/api/v1/tracking/custom-domains", other.auth, "POST", { hostname })
        assert.strictEqual(taken.status, 409)
        assert.strictEqual(taken.json.error.code, "invalid_state")
        assert.deepStrictEqual((yield* send("/api/v1/tracking/custom-domains", other.auth)).json.data, [])

        // analytics:read lists but cannot register.
        const { key: reader } = yield* seedApiKey(tracked.profile, { scopes: ["analytics:read"] })
        assert.lengthOf((yield* send("/api/v1/tracking/custom-domains", bearer(reader))).json.data, 1)
        const write = yield* send("/api/v1/tracking/custom-domains", bearer(reader), "POST", { hostname: uniqueHost("x") })
        assert.strictEqual(write.status, 403)
        assert.strictEqual(write.json.error.code, "insufficient_scope")
      }))

    it.effect("DELETE removes the domain; another profile's id, an unknown id and a malformed id: one identical 404", () =>
      Effect.gen(function*() {
        const mine = yield* trackedProfile()
        const theirs = yield* trackedProfile()
        const theirDomain = (yield* send("/api/v1/tracking/custom-domains", theirs.auth, "POST", { hostname: uniqueHost("theirs") }))
          .json.data
        const answers: Array<string> = []
        for (const id of [theirDomain.id, crypto.randomUUID(), "not-an-id"]) {
          for (const [method, suffix] of [["DELETE", ""], ["POST", "/verify"]] as const) {
            const response = yield* send(`/api/v1/tracking/custom-domains/${id}${suffix}`, mine.auth, method)
            assert.strictEqual(response.status, 404, `${method} ${id}`)
            assert.strictEqual(response.json.error.code, "not_found")
            answers.push(withoutRequestId(response.text))
          }
        }
        assert.strictEqual(new Set(answers).size, 1)
        const sql = yield* SqlClient
        const kept = yield* sql<{ status: string; checked: boolean }>`
          SELECT status, checked_at IS NOT NULL AS checked FROM tracking_domains WHERE id = ${theirDomain.id}`
        assert.deepStrictEqual(kept.map((row) => ({ ...row })), [{ status: "pending", checked: false }])

        const removed = yield* send(`/api/v1/tracking/custom-domains/${theirDomain.id}`, theirs.auth, "DELETE")
        assert.strictEqual(removed.status, 200)
        assert.deepStrictEqual(removed.json.data, { id: theirDomain.id, hostname: theirDomain.hostname, removed: true })
        assert.lengthOf(yield* sql`SELECT 1 FROM tracking_domains WHERE id = ${theirDomain.id}`, 0)
        assert.deepStrictEqual((yield* send("/api/v1/tracking/custom-domains", theirs.auth)).json.data, [])
        assert.strictEqual((yield* send(`/api/v1/tracking/custom-domains/${theirDomain.id}`, theirs.auth, "DELETE")).status, 404)
        // The hostname is free again.
        assert.strictEqual(
          (yield* send("/api/v1/tracking/custom-domains", mine.auth, "POST", { hostname: theirDomain.hostname })).status,
          201
        )
      }))
  })

  describe("install verification", () => {
    it.effect("waiting until a tracker event from an allowed origin arrives after the start, then verified", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile({ allow_server_side: true })
        assert.deepStrictEqual((yield* send("/api/v1/tracking/verification", tracked.auth)).json, { data: null })
        // An event before the attempt does not count.
        assert.strictEqual((yield* collect(event(tracked.trackingKey, { event_id: "evt_before_000" }))).status, 204)

        const started = yield* send("/api/v1/tracking/verification", tracked.auth, "POST")
        assert.strictEqual(started.status, 201)
        const attempt = started.json.data
        assert.strictEqual(attempt.status, "waiting")
        assert.strictEqual(Date.parse(attempt.expires_at) - Date.parse(attempt.started_at), 30 * 60 * 1000)
        assert.deepStrictEqual({ ...attempt, id: "", started_at: "", expires_at: "" }, {
          id: "",
          status: "waiting",
          started_at: "",
          expires_at: "",
          verified_at: null,
          event: null
        })
        assert.strictEqual((yield* send("/api/v1/tracking/verification", tracked.auth)).json.data.status, "waiting")

        // A server-side event (no Origin) and a bot are no proof of the install.
        const serverSide = yield* call("/t/collect", {
          method: "POST",
          headers: { "content-type": "application/json", "user-agent": CHROME },
          body: JSON.stringify(event(tracked.trackingKey, { event_id: "evt_server_000" }))
        })
        assert.strictEqual(serverSide.status, 204)
        assert.strictEqual((yield* collect(event(tracked.trackingKey), { "user-agent": GOOGLEBOT })).status, 204)
        assert.strictEqual((yield* send("/api/v1/tracking/verification", tracked.auth)).json.data.status, "waiting")

        assert.strictEqual((yield* collect(event(tracked.trackingKey, { event_id: "evt_browser_00" }))).status, 204)
        const { key: reader } = yield* seedApiKey(tracked.profile, { scopes: ["analytics:read"] })
        const verified = yield* send("/api/v1/tracking/verification", bearer(reader))
        assert.strictEqual(verified.status, 200)
        const sql = yield* SqlClient
        const touch = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM touches WHERE profile_id = ${tracked.profile.profileId} AND idempotency_key = 'evt_browser_00'`
        assert.strictEqual(verified.json.data.id, attempt.id)
        assert.strictEqual(verified.json.data.status, "verified")
        assert.deepStrictEqual(verified.json.data.event, {
          touch_id: touch[0]?.id,
          origin: ORIGIN,
          event_type: "page_view",
          received_at: verified.json.data.verified_at
        })
        // Kept: a later read answers the same.
        assert.deepStrictEqual((yield* send("/api/v1/tracking/verification", tracked.auth)).json, verified.json)
        // Starting needs tracking:write.
        const refused = yield* send("/api/v1/tracking/verification", bearer(reader), "POST")
        assert.strictEqual(refused.status, 403)
      }))

    it.effect("an attempt whose 30 minutes passed without an event is expired; a new attempt starts waiting", () =>
      Effect.gen(function*() {
        const tracked = yield* trackedProfile()
        const attempt = (yield* send("/api/v1/tracking/verification", tracked.auth, "POST")).json.data
        const sql = yield* SqlClient
        yield* sql`
          UPDATE tracking_verifications SET started_at = started_at - interval '31 minutes',
            expires_at = expires_at - interval '31 minutes' WHERE id = ${attempt.id}`
        // An event now is after the window.
        assert.strictEqual((yield* collect(event(tracked.trackingKey))).status, 204)
        const expired = yield* send("/api/v1/tracking/verification", tracked.auth)
        assert.strictEqual(expired.json.data.status, "expired")
        assert.strictEqual(expired.json.data.event, null)
        const again = yield* send("/api/v1/tracking/verification", tracked.auth, "POST")
        assert.notStrictEqual(again.json.data.id, attempt.id)
        assert.strictEqual((yield* send("/api/v1/tracking/verification", tracked.auth)).json.data.status, "waiting")
      }))
  })

  describe("feed, ops, origin, quality", () => {
    /** Five stored touches (3 in the last 24 h), two bot drops, one Do-Not-Track drop. */
    const seeded = Effect.gen(function*() {
      const tracked = yield* trackedProfile({ respect_do_not_track: true })
      const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString()
      const events = [
        event(tracked.trackingKey, {
          event_id: "evt_feed_00001",
          occurred_at: hoursAgo(72),
          url: "https://shop.example.com/a?utm_source=google&utm_medium=cpc&gclid=CLICKVALUE123"
        }),
        event(tracked.trackingKey, {
          event_id: "evt_feed_00002",
          occurred_at: hoursAgo(48),
          url: "https://shop.example.com/b?utm_source=newsletter&utm_medium=email"
        }),
        event(tracked.trackingKey, { event_id: "evt_feed_00003", occurred_at: hoursAgo(3), url: "https://shop.example.com/c" }),
        event(tracked.trackingKey, {
          event_id: "evt_feed_00004",
          occurred_at: hoursAgo(2),
          url: "https://shop.example.com/d?utm_campaign=spring",
          referrer: "https://blog.example.org/post"
        }),
        event(tracked.trackingKey, {
          event_id: "evt_feed_00005",
          type: "signup",
          occurred_at: hoursAgo(1),
          url: "https://shop.example.com/e",
          properties: { plan: "pro", email: "person@example.com" }
        })
      ]
      for (const body of events) assert.strictEqual((yield* collect(body)).status, 204)
      assert.strictEqual((yield* collect(event(tracked.trackingKey), { "user-agent": GOOGLEBOT })).status, 204)
      assert.strictEqual((yield* collect(event(tracked.trackingKey), { "user-agent": "" })).status, 204)
      assert.strictEqual((yield* collect(event(tracked.trackingKey), { dnt: "1" })).status, 204)
      return tracked
    })

    it.effect("GET /tracking/events: newest first, keyset pages; never click ids, browser identity or property values", () =>
      Effect.gen(function*() {
        const tracked = yield* seeded
        const first = yield* send("/api/v1/tracking/events?limit=2", tracked.auth)
        assert.strictEqual(first.status, 200)
        assert.deepStrictEqual(first.json.data.map((row: { event_type: string; path: string }) => row.path), ["/e", "/d"])
        assert.strictEqual(first.json.pagination.has_next, true)
        const newest = first.json.data[0]
        assert.deepStrictEqual(Object.keys(newest).sort(), [
          "browser", "campaign", "channel", "city", "click_id_kind", "country", "device", "event_type", "join_method", "medium",
          "occurred_at", "origin", "os", "path", "property_keys", "received_at", "referrer_domain", "source", "touch_id", "url", "utm"
        ])
        assert.strictEqual(newest.event_type, "signup")
        assert.deepStrictEqual(newest.property_keys, ["email", "plan"])
        assert.strictEqual(newest.origin, ORIGIN)
        assert.strictEqual(newest.device, "desktop")
        const second = yield* send(`/api/v1/tracking/events?limit=2&cursor=${first.json.pagination.cursor}`, tracked.auth)
        assert.deepStrictEqual(second.json.data.map((row: { path: string }) => row.path), ["/c", "/b"])
        const third = yield* send(`/api/v1/tracking/events?limit=2&cursor=${second.json.pagination.cursor}`, tracked.auth)
        assert.deepStrictEqual(third.json.data.map((row: { path: string }) => row.path), ["/a"])
        assert.deepStrictEqual(third.json.pagination, { has_next: false, cursor: null })
        const paid = third.json.data[0]
        assert.strictEqual(paid.click_id_kind, "gclid")
        assert.deepStrictEqual(paid.utm, { utm_source: "google", utm_medium: "cpc" })
        assert.deepStrictEqual(paid.campaign, { external_id: null, name: null })
        assert.strictEqual(paid.channel, "paid_search")
        const all = [first.text, second.text, third.text].join("")
        for (const hidden of ["CLICKVALUE123", "anon_0123456789", "sess_0123456789", "person@example.com", "anonymous_id", "session_id", "customer"]) {
          assert.notInclude(all, hidden)
        }

        const bad = yield* send("/api/v1/tracking/events?cursor=garbage", tracked.auth)
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.error.code, "invalid_parameter")
        assert.strictEqual((yield* send("/api/v1/tracking/events?limit=101", tracked.auth)).status, 400)
        const { key: reader } = yield* seedApiKey(tracked.profile, { scopes: ["analytics:read"] })
        const refused = yield* send("/api/v1/tracking/events", bearer(reader))
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
      }))

    it.effect("GET /tracking/ops, /origin and /quality: exact counts and shares on seeded touches", () =>
      Effect.gen(function*() {
        const tracked = yield* seeded
        const { key: reader } = yield* seedApiKey(tracked.profile, { scopes: ["analytics:read"] })
        const ops = yield* send("/api/v1/tracking/ops", bearer(reader))
        assert.strictEqual(ops.status, 200)
        const data = ops.json.data
        assert.deepStrictEqual(data.touches, { last_24h: 3, last_7d: 5 })
        assert.deepStrictEqual(data.drops, { today: { bot: 2, do_not_track: 1 }, last_7d: { bot: 2, do_not_track: 1 } })
        assert.isString(data.last_event_at)
        assert.isBelow(Date.now() - Date.parse(data.last_event_at), 60_000)
        // All five were received just now: lags of about 72, 48, 3, 2 and 1 hours.
        assert.strictEqual(data.collector_lag_ms.sample_size, 5)
        assert.closeTo(data.collector_lag_ms.p50, 3 * 3_600_000, 60_000)
        assert.closeTo(data.collector_lag_ms.max, 72 * 3_600_000, 60_000)
        assert.isAbove(data.collector_lag_ms.p95, data.collector_lag_ms.p50)
        assert.strictEqual(data.active_tracking_keys, 1)

        const origin = yield* send("/api/v1/tracking/origin", bearer(reader))
        assert.deepStrictEqual(origin.json.data, {
          collector_url: `${BASE_URL}/t/collect`,
          default_collector_url: `${BASE_URL}/t/collect`,
          custom_domains: [],
          allowed_origins: [ORIGIN],
          allow_server_side: false
        })

        const quality = yield* send("/api/v1/tracking/quality?days=7", bearer(reader))
        assert.strictEqual(quality.status, 200)
        const q = quality.json.data
        assert.strictEqual(q.window.days, 7)
        assert.closeTo(Date.now() - Date.parse(q.window.since), 7 * 86_400_000, 60_000)
        assert.strictEqual(q.touches, 5)
        assert.deepStrictEqual(q.with_utm, { count: 3, ratio: 0.6 })
        assert.deepStrictEqual(q.with_click_id, { count: 1, ratio: 0.2 })
        assert.deepStrictEqual(q.direct, { count: 2, ratio: 0.4 })
        // utm_campaign alone names no source: the referrer decides (referral, blog.example.org); nothing is (not set).
        assert.deepStrictEqual(q.unclassified, { count: 0, ratio: 0 })
        assert.deepStrictEqual(q.identified, { count: 0, ratio: 0 })
        assert.deepStrictEqual(q.by_channel, [
          { channel: "direct", count: 2, ratio: 0.4 },
          { channel: "email", count: 1, ratio: 0.2 },
          { channel: "paid_search", count: 1, ratio: 0.2 },
          { channel: "referral", count: 1, ratio: 0.2 }
        ])
        // 5 stored + 2 bots + 1 do-not-track received.
        assert.deepStrictEqual(q.bot_drops, { count: 2, ratio: 0.25 })
        assert.deepStrictEqual(q.do_not_track_drops, { count: 1, ratio: 0.125 })
        const day = (yield* send("/api/v1/tracking/quality?days=1", bearer(reader))).json.data
        assert.strictEqual(day.touches, 3)
        assert.strictEqual((yield* send("/api/v1/tracking/quality?days=91", bearer(reader))).status, 400)

        // An empty profile: zero counts, null ratios.
        const empty = yield* trackedProfile()
        const none = (yield* send("/api/v1/tracking/quality", empty.auth)).json.data
        assert.strictEqual(none.touches, 0)
        assert.deepStrictEqual(none.with_utm, { count: 0, ratio: null })
        assert.deepStrictEqual(none.bot_drops, { count: 0, ratio: null })
        const emptyOps = (yield* send("/api/v1/tracking/ops", empty.auth)).json.data
        assert.strictEqual(emptyOps.last_event_at, null)
        assert.deepStrictEqual(emptyOps.collector_lag_ms, { sample_size: 0, p50: null, p95: null, max: null })
      }))

    it.effect("the connect-broker tier: feed, ops and quality answer empty; installation routes answer in full", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `merchant-${crypto.randomUUID()}` })).json.data
        const profile: SeededProfile = { profileId: created.profile_id, workspaceId: created.workspace_id }
        const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write", "analytics:read"], rateLimitPerMinute: 1000 })
        const auth = bearer(key)
        const trackingKey = (yield* send("/api/v1/tracking/keys", auth)).json.data[0].key
        const sql = yield* SqlClient
        // PATCH settings is an attribution-tier write: set the origin directly.
        yield* sql`
          INSERT INTO tracking_settings (profile_id, allowed_origins) VALUES (${profile.profileId}, ${[ORIGIN]}::text[])
          ON CONFLICT (profile_id) DO UPDATE SET allowed_origins = EXCLUDED.allowed_origins`
        assert.strictEqual((yield* collect(event(trackingKey))).status, 204)
        assert.strictEqual(yield* touchCount(profile), 1, "touches are stored on every tier")

        assert.deepStrictEqual((yield* send("/api/v1/tracking/events", auth)).json, {
          data: [],
          pagination: { has_next: false, cursor: null }
        })
        const ops = (yield* send("/api/v1/tracking/ops", auth)).json.data
        assert.deepStrictEqual([ops.touches, ops.last_event_at], [{ last_24h: 0, last_7d: 0 }, null])
        assert.strictEqual((yield* send("/api/v1/tracking/quality", auth)).json.data.touches, 0)
        assert.strictEqual((yield* send("/api/v1/tracking/installers/gtm", auth)).status, 200)
        assert.strictEqual((yield* send("/api/v1/tracking/origin", auth)).json.data.allowed_origins[0], ORIGIN)
        const registered = yield* send("/api/v1/tracking/custom-domains", auth, "POST", { hostname: uniqueHost("broker") })
        assert.strictEqual(registered.status, 201, "no entitlement gate on tracking installation")
        assert.strictEqual((yield* send("/api/v1/tracking/verification", auth, "POST")).status, 201)
      }))
  })
})
