/**
 * Customer link tokens (decision 0037) through real HTTP: minting for every selector kind, every
 * `reason`, the `customers:read` gating of `customer_profile_id` (and of email/phone selectors),
 * the PII access log, the recipes, the documented 400s, 503 without a secret, BOLA; then the
 * binding: the snippet forwards `svc_lt`, the collector binds the touch (`join_method:
 * link_token`), a merged customer's survivor takes it, an erased one binds nothing, and a
 * tampered, expired, foreign-secret or other profile's token is ignored (204, touch unbound).
 * Customers are written by SQL (the identity domain's writes are not what this file tests).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { deriveLinkTokenKeys, mintLinkToken, verifyLinkToken } from "../../src/identity/link-tokens/token.ts"
import { call, LINK_TOKEN_SECRET, serveApp, testSettings } from "../support/app.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const BASE_URL = "http://svc.test"
const ORIGIN = "https://shop.example.com"
const CHROME =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
const ROUTE = "POST /api/v1/customers/link-tokens"
const DAY_MS = 86_400_000
const KEYS = deriveLinkTokenKeys(LINK_TOKEN_SECRET)

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const send = (path: string, headers: Record<string, string>, method = "GET", body?: unknown) =>
  call(path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })

const mint = (key: string, body: unknown) => send("/api/v1/customers/link-tokens", bearer(key), "POST", body)

interface Fixture extends SeededProfile {
  /** `attribution:write` only. */
  readonly writer: string
  /** `attribution:write` and `customers:read`. */
  readonly reader: string
}

const seed = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key: writer } = yield* seedApiKey(profile, { scopes: ["attribution:write"], rateLimitPerMinute: 10_000 })
  const { key: reader } = yield* seedApiKey(profile, {
    scopes: ["attribution:write", "customers:read"],
    rateLimitPerMinute: 10_000
  })
  return { ...profile, writer, reader } satisfies Fixture
})

const customer = (profileId: string, customerKey: string | null, createdAt = new Date()) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`INSERT INTO customers (id, profile_id, customer_key, created_at) VALUES (${id}, ${profileId}, ${customerKey}, ${createdAt})`
    return id
  })

const identifier = (profileId: string, customerId: string, kind: string, value: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql`
      INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
      VALUES (${crypto.randomUUID()}, ${profileId}, ${customerId}, ${kind}, ${value})`)

const merge = (mergedId: string, survivorId: string) =>
  Effect.flatMap(SqlClient, (sql) => sql`UPDATE customers SET merged_into_id = ${survivorId} WHERE id = ${mergedId}`)

/** What an erasure leaves: the row emptied and marked erased, its key kept only on the receipt. */
const erase = (profileId: string, customerId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`
      INSERT INTO customer_erasures (id, profile_id, request_ref, customer_id, customer_key, selector_digest, completed_at)
      SELECT ${crypto.randomUUID()}, profile_id, ${`ref-${crypto.randomUUID()}`}, id, customer_key, 'digest', now()
      FROM customers WHERE id = ${customerId} AND profile_id = ${profileId}`
    yield* sql`DELETE FROM customer_identifiers WHERE customer_id = ${customerId}`
    yield* sql`UPDATE customers SET customer_key = NULL, first_name = NULL, last_name = NULL, erased_at = now() WHERE id = ${customerId}`
  })

const piiLogOf = (profile: SeededProfile) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ route: string; result: string; actor_kind: string }>`
      SELECT route, result, actor_kind FROM pii_access_log WHERE workspace_id = ${profile.workspaceId} ORDER BY occurred_at`)

/** A profile whose tracker accepts `ORIGIN`, with its tracking key. */
const tracked = (profile: SeededProfile) =>
  Effect.gen(function*() {
    const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"], rateLimitPerMinute: 1000 })
    const created = yield* send("/api/v1/tracking/keys", bearer(key), "POST")
    assert.strictEqual(created.status, 201)
    const patched = yield* send("/api/v1/tracking/settings", bearer(key), "PATCH", { allowed_origins: [ORIGIN] })
    assert.strictEqual(patched.status, 200)
    return { trackingKey: created.json.data.key as string, auth: bearer(key) }
  })

const collect = (body: unknown) =>
  call("/t/collect", {
    method: "POST",
    headers: { "content-type": "text/plain", origin: ORIGIN, "user-agent": CHROME },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

const pageView = (trackingKey: string, extra: Record<string, unknown> = {}) => ({
  tracking_key: trackingKey,
  anonymous_id: `anon_${crypto.randomUUID().slice(0, 12)}`,
  session_id: "sess_0123456789",
  type: "page_view",
  url: "https://shop.example.com/offer?utm_source=newsletter",
  ...extra
})

const touchesOf = (profile: SeededProfile) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ customer_id: string | null; join_method: string | null; url: string; anonymous_id: string }>`
      SELECT customer_id::text AS customer_id, join_method, url, anonymous_id
      FROM touches WHERE profile_id = ${profile.profileId} ORDER BY received_at, id`)

/** The one token a single-selector mint answers. */
const tokenFor = (key: string, selector: Record<string, string>) =>
  Effect.gen(function*() {
    const response = yield* mint(key, { selectors: [selector] })
    assert.strictEqual(response.status, 200, response.text)
    const row = response.json.data[0]
    assert.strictEqual(row.status, "minted", response.text)
    return row.token as string
  })

const workerOff = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(serveApp(testSettings({ baseUrl: BASE_URL })).pipe(Layer.provide(workerOff)), {
  timeout: "90 seconds",
  excludeTestServices: true
})("link tokens", (it) => {
  describe("POST /api/v1/customers/link-tokens", () => {
    it.effect("mints for customer_key and each of the five identifier types; tokens are opaque, signed, bound to profile and customer", () =>
      Effect.gen(function*() {
        const f = yield* seed
        const keyed = yield* customer(f.profileId, "cust-42")
        const person = yield* customer(f.profileId, null)
        yield* identifier(f.profileId, person, "email", "ann@example.com")
        yield* identifier(f.profileId, person, "phone", "+33612345678")
        yield* identifier(f.profileId, person, "crm_contact_id", "crm-0007")
        yield* identifier(f.profileId, person, "anonymous_id", "anon_ann_0001")
        const pinned = yield* customer(f.profileId, "other-key")
        yield* identifier(f.profileId, pinned, "external_id", "legacy-9")

        const before = Date.now()
        const response = yield* mint(f.reader, {
          selectors: [
            { customer_key: "cust-42" },
            { identifier_type: "email", value: "  Ann@Example.COM " },
            { identifier_type: "phone", value: " +33 6 12 34 56 78" },
            { identifier_type: "crm_contact_id", value: "crm-0007" },
            { identifier_type: "anonymous_id", value: "anon_ann_0001" },
            { identifier_type: "external_id", value: "cust-42" },
            { identifier_type: "external_id", value: "legacy-9" }
          ]
        })
        assert.strictEqual(response.status, 200, response.text)
        const rows = response.json.data
        const expected = [
          [keyed, "cust-42"],
          [person, null],
          [person, null],
          [person, null],
          [person, null],
          [keyed, "cust-42"],
          [pinned, "other-key"]
        ] as const
        assert.lengthOf(rows, expected.length)
        const tokens = new Set<string>()
        rows.forEach((row: any, index: number) => {
          const [customerId, customerKey] = expected[index] ?? ["", null]
          assert.strictEqual(row.index, index)
          assert.strictEqual(row.status, "minted")
          assert.strictEqual(row.customer_key, customerKey)
          assert.strictEqual(row.customer_profile_id, customerId)
          assert.match(row.token, /^lt1_[A-Za-z0-9_-]{91}$/)
          assert.strictEqual(row.url_parameter, `svc_lt=${row.token}`)
          assert.isFalse("reason" in row)
          assert.isFalse("message" in row)
          assert.isFalse("url" in row)
          // Opaque: neither id appears in the token, as text or as hex.
          for (const id of [customerId, f.profileId]) {
            assert.notInclude(row.token, id)
            assert.notInclude(Buffer.from(row.token.slice(4), "base64url").toString("hex"), id.replaceAll("-", ""))
          }
          const verdict = verifyLinkToken(KEYS, row.token, Math.floor(Date.now() / 1000))
          assert.isTrue(verdict.valid)
          if (verdict.valid) {
            assert.strictEqual(verdict.claims.customerId, customerId)
            assert.strictEqual(verdict.claims.profileId, f.profileId)
          }
          tokens.add(row.token)
        })
        assert.strictEqual(tokens.size, rows.length, "every token is distinct, even for the same customer")
        const expiresAt = Date.parse(response.json.meta.expires_at)
        assert.isAtLeast(expiresAt, before + 30 * DAY_MS - 2000)
        assert.isAtMost(expiresAt, Date.now() + 30 * DAY_MS + 1000)
        assert.deepStrictEqual(response.json.meta, {
          recipe: { name: "token", requires: [] },
          parameter: "svc_lt",
          expires_at: response.json.meta.expires_at,
          minted: 7,
          not_minted: 0
        })
        assert.strictEqual(rows[0].expires_at, response.json.meta.expires_at)

        // expires_in_days shortens (or lengthens, up to 90) the life of the tokens.
        const short = yield* mint(f.writer, { selectors: [{ customer_key: "cust-42" }], expires_in_days: 1 })
        assert.strictEqual(short.status, 200)
        assert.isAtMost(Date.parse(short.json.meta.expires_at), Date.now() + DAY_MS + 1000)
      }))

    it.effect("every reason: no_selector, unknown_identifier_type, malformed_selector (invalid), no_match and erased (unresolved)", () =>
      Effect.gen(function*() {
        const f = yield* seed
        const erasedByReceipt = yield* customer(f.profileId, "gone-1")
        yield* erase(f.profileId, erasedByReceipt)
        const erasedKeyKept = yield* customer(f.profileId, "gone-2")
        yield* Effect.flatMap(SqlClient, (sql) => sql`UPDATE customers SET erased_at = now() WHERE id = ${erasedKeyKept}`)
        const erasedCrm = yield* customer(f.profileId, null)
        yield* identifier(f.profileId, erasedCrm, "crm_contact_id", "crm-gone")
        yield* Effect.flatMap(SqlClient, (sql) => sql`UPDATE customers SET erased_at = now() WHERE id = ${erasedCrm}`)

        const response = yield* mint(f.writer, {
          selectors: [
            {},
            { identifier_type: "fax", value: "123" },
            { identifier_type: "national_id", value: "1 85 05 78 006 084 36" },
            { customer_key: "cust-1", identifier_type: "crm_contact_id", value: "x" },
            { identifier_type: "anonymous_id" },
            { value: "orphan" },
            { identifier_type: "email", value: "not-an-email" },
            { identifier_type: "anonymous_id", value: "short" },
            { customer_key: "   " },
            { customer_key: "nobody-here" },
            { identifier_type: "crm_contact_id", value: "crm-unknown" },
            { customer_key: "gone-1" },
            { customer_key: "gone-2" },
            { identifier_type: "crm_contact_id", value: "crm-gone" }
          ]
        })
        assert.strictEqual(response.status, 200, response.text)
        const summary = response.json.data.map((row: any) => [row.index, row.status, row.reason, row.customer_key])
        assert.deepStrictEqual(summary, [
          [0, "invalid", "no_selector", null],
          [1, "invalid", "unknown_identifier_type", null],
          [2, "invalid", "unknown_identifier_type", null],
          [3, "invalid", "malformed_selector", "cust-1"],
          [4, "invalid", "malformed_selector", null],
          [5, "invalid", "malformed_selector", null],
          [6, "invalid", "malformed_selector", null],
          [7, "invalid", "malformed_selector", null],
          [8, "invalid", "malformed_selector", "   "],
          [9, "unresolved", "no_match", "nobody-here"],
          [10, "unresolved", "no_match", null],
          [11, "unresolved", "erased", "gone-1"],
          [12, "unresolved", "erased", "gone-2"],
          [13, "unresolved", "erased", null]
        ])
        for (const row of response.json.data) {
          assert.isString(row.message)
          assert.isAbove(row.message.length, 10)
          for (const absent of ["token", "url_parameter", "url", "expires_at", "customer_profile_id"]) {
            assert.isFalse(absent in row, `${absent} on a row that minted nothing`)
          }
        }
        assert.include(response.json.data[2].message, "national_id")
        assert.notInclude(response.text, "1 85 05 78", "a national id sent as a value is never echoed")
        assert.strictEqual(response.json.meta.minted, 0)
        assert.strictEqual(response.json.meta.not_minted, 14)
      }))

    it.effect("a merged customer mints for its survivor (by key or identifier); a live customer named directly wins over a merged one", () =>
      Effect.gen(function*() {
        const f = yield* seed
        const survivor = yield* customer(f.profileId, "survivor-1")
        const merged = yield* customer(f.profileId, "merged-1")
        yield* identifier(f.profileId, merged, "crm_contact_id", "crm-merged")
        yield* merge(merged, survivor)
        // Two hops: merged-2 -> merged-1 -> survivor-1.
        const older = yield* customer(f.profileId, "merged-2")
        yield* merge(older, merged)
        // The same CRM id on a live customer and on a merged one: the live one, named directly, wins.
        const direct = yield* customer(f.profileId, "direct-1", new Date(Date.now() + 1000))
        yield* identifier(f.profileId, direct, "crm_contact_id", "crm-shared")
        yield* identifier(f.profileId, merged, "crm_contact_id", "crm-shared")

        const response = yield* mint(f.reader, {
          selectors: [
            { customer_key: "merged-1" },
            { identifier_type: "crm_contact_id", value: "crm-merged" },
            { customer_key: "merged-2" },
            { identifier_type: "crm_contact_id", value: "crm-shared" }
          ]
        })
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(
          response.json.data.map((row: any) => [row.status, row.customer_key, row.customer_profile_id]),
          [
            ["minted", "survivor-1", survivor],
            ["minted", "survivor-1", survivor],
            ["minted", "survivor-1", survivor],
            ["minted", "direct-1", direct]
          ]
        )
        // A survivor that was erased afterwards: the merged customer's key answers erased.
        yield* erase(f.profileId, survivor)
        const after = yield* mint(f.writer, { selectors: [{ customer_key: "merged-1" }] })
        assert.strictEqual(after.json.data[0].reason, "erased")
      }))

    it.effect("customer_profile_id only with customers:read (absent, not null, without it); those reads land in the PII access log", () =>
      Effect.gen(function*() {
        const f = yield* seed
        const id = yield* customer(f.profileId, "pii-1")
        yield* identifier(f.profileId, id, "email", "pii@example.com")

        const plain = yield* mint(f.writer, { selectors: [{ customer_key: "pii-1" }, { customer_key: "nobody" }] })
        assert.strictEqual(plain.status, 200)
        assert.strictEqual(plain.json.data[0].status, "minted")
        assert.isFalse("customer_profile_id" in plain.json.data[0])
        assert.notInclude(plain.text, "customer_profile_id")
        assert.notInclude(plain.text, id)
        assert.deepStrictEqual(yield* piiLogOf(f), [])

        // Selecting by email or phone is a person lookup: 403 without customers:read, nothing minted or logged.
        for (const selector of [{ identifier_type: "email", value: "pii@example.com" }, { identifier_type: "phone", value: "+12025550100" }]) {
          const refused = yield* mint(f.writer, { selectors: [{ customer_key: "pii-1" }, selector] })
          assert.strictEqual(refused.status, 403, refused.text)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
          assert.strictEqual(refused.json.error.reason, "missing_scope:customers:read")
          assert.include(refused.json.error.message, "selectors 1")
        }
        assert.deepStrictEqual(yield* piiLogOf(f), [])

        const withPii = yield* mint(f.reader, { selectors: [{ customer_key: "pii-1" }] })
        assert.strictEqual(withPii.status, 200)
        assert.strictEqual(withPii.json.data[0].customer_profile_id, id)
        assert.deepStrictEqual(yield* piiLogOf(f), [{ route: ROUTE, result: "allowed", actor_kind: "api_key" }])
        // An email lookup with customers:read is logged even when it matches nobody.
        const lookup = yield* mint(f.reader, { selectors: [{ identifier_type: "email", value: "nobody@example.com" }] })
        assert.strictEqual(lookup.json.data[0].reason, "no_match")
        assert.lengthOf(yield* piiLogOf(f), 2)
        // customers:read with nothing resolved and no contact-data lookup: no person data, no entry.
        const nothing = yield* mint(f.reader, { selectors: [{ customer_key: "nobody" }] })
        assert.strictEqual(nothing.status, 200)
        assert.lengthOf(yield* piiLogOf(f), 2)
      }))

    it.effect("partner_page recipe: requires landing_url on an allowed tracking origin; rows carry the url with svc_lt set", () =>
      Effect.gen(function*() {
        const f = yield* seed
        yield* tracked(f)
        yield* customer(f.profileId, "page-1")
        const landing = `${ORIGIN}/book?ref=partner&svc_lt=stale#slots`
        const response = yield* mint(f.writer, {
          recipe: "partner_page",
          landing_url: landing,
          selectors: [{ customer_key: "page-1" }, { customer_key: "nobody" }]
        })
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json.meta.recipe, { name: "partner_page", requires: ["landing_url"] })
        const [row, missing] = response.json.data
        const url = new URL(row.url)
        assert.strictEqual(url.origin, ORIGIN)
        assert.strictEqual(url.pathname, "/book")
        assert.strictEqual(url.searchParams.get("ref"), "partner")
        assert.deepStrictEqual(url.searchParams.getAll("svc_lt"), [row.token])
        assert.strictEqual(url.hash, "#slots")
        assert.isFalse("url" in missing)
      }))

    it.effect("bad input is a documented 400 validation_error naming the field, and nothing is minted or logged", () =>
      Effect.gen(function*() {
        const f = yield* seed
        yield* tracked(f)
        yield* customer(f.profileId, "bad-1")
        const one = [{ customer_key: "bad-1" }]
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{}, "body.selectors"],
          [{ selectors: [] }, "body.selectors"],
          [{ selectors: Array.from({ length: 101 }, (_, i) => ({ customer_key: `k-${i}` })) }, "body.selectors"],
          [{ selectors: [{ customer_key: 42 }] }, "body.selectors.0.customer_key"],
          [{ selectors: ["bad-1"] }, "body.selectors.0"],
          [{ selectors: one, recipe: "email_blast" }, "body.recipe"],
          [{ selectors: one, expires_in_days: 0 }, "body.expires_in_days"],
          [{ selectors: one, expires_in_days: 91 }, "body.expires_in_days"],
          [{ selectors: one, recipe: "partner_page" }, "body.landing_url"],
          [{ selectors: one, recipe: "partner_page", landing_url: "not a url" }, "body.landing_url"],
          [{ selectors: one, recipe: "partner_page", landing_url: "https://elsewhere.example.org/x" }, "body.landing_url"],
          [{ selectors: one, landing_url: `${ORIGIN}/x` }, "body.landing_url"],
          ["{\"selectors\": [", "body"]
        ]
        for (const [body, field] of cases) {
          const response = yield* mint(f.reader, body)
          assert.strictEqual(response.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${response.text}`)
          assert.strictEqual(response.json.error.code, "validation_error")
          assert.include(response.json.error.message, field)
          assert.notInclude(response.text, "lt1_")
        }
        // 100 selectors is the cap, not over it.
        const full = yield* mint(f.writer, { selectors: Array.from({ length: 100 }, () => ({ customer_key: "bad-1" })) })
        assert.strictEqual(full.status, 200)
        assert.strictEqual(full.json.meta.minted, 100)
        assert.deepStrictEqual(yield* piiLogOf(f), [])
      }))

    it.effect("scope: attribution:write; a read-only key is 403; no credential is 401", () =>
      Effect.gen(function*() {
        const f = yield* seed
        yield* customer(f.profileId, "scope-1")
        const { key: readOnly } = yield* seedApiKey(f, { scopes: ["conversions:read", "customers:read"] })
        const refused = yield* mint(readOnly, { selectors: [{ customer_key: "scope-1" }] })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        const anonymous = yield* call("/api/v1/customers/link-tokens", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ selectors: [{ customer_key: "scope-1" }] })
        })
        assert.strictEqual(anonymous.status, 401)
      }))

    it.effect("published in /api/v1/openapi.json with its policy, errors and schemas; the collector documents link_token", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/openapi.json")
        assert.strictEqual(response.status, 200)
        const operation = response.json.paths["/api/v1/customers/link-tokens"]?.post
        assert.isDefined(operation)
        assert.deepStrictEqual(operation["x-scopes"], ["attribution:write"])
        assert.strictEqual(operation["x-scope-grain"], "profile")
        for (const status of ["200", "400", "403", "503"]) assert.property(operation.responses, status)
        const schemas = response.json.components.schemas
        for (const name of ["MintLinkTokens", "MintedLinkTokens", "LinkTokenRow", "LinkTokenSelector"]) assert.property(schemas, name)
        assert.property(schemas.TrackerEvent.properties, "link_token")
      }))

    it.effect("BOLA: a key of profile A never reaches profile B's customers (same answer as a customer that does not exist)", () =>
      Effect.gen(function*() {
        const a = yield* seed
        const b = yield* seed
        const theirs = yield* customer(b.profileId, "b-only")
        yield* identifier(b.profileId, theirs, "anonymous_id", "anon_b_only_01")
        yield* identifier(b.profileId, theirs, "email", "b@example.com")
        const response = yield* mint(a.reader, {
          selectors: [
            { customer_key: "b-only" },
            { identifier_type: "anonymous_id", value: "anon_b_only_01" },
            { identifier_type: "email", value: "b@example.com" }
          ]
        })
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(response.json.data.map((row: any) => row.reason), ["no_match", "no_match", "no_match"])
        assert.notInclude(response.text, theirs)
        const unknown = yield* mint(a.reader, { selectors: [{ customer_key: "never-existed" }] })
        assert.deepStrictEqual(
          { ...response.json.data[0], customer_key: null, index: 0 },
          { ...unknown.json.data[0], customer_key: null, index: 0 }
        )
      }))
  })

  describe("binding through the tracker", () => {
    it.effect("the snippet forwards svc_lt (and drops it from the address bar); the collector binds the touch with join_method link_token", () =>
      Effect.gen(function*() {
        const f = yield* seed
        const site = yield* tracked(f)
        const id = yield* customer(f.profileId, "visitor-1")
        const token = yield* tokenFor(f.writer, { customer_key: "visitor-1" })

        const snippet = yield* send("/api/v1/tracking/snippet", site.auth)
        assert.strictEqual(snippet.status, 200)
        const beacons: Array<string> = []
        const replaced: Array<string> = []
        const storage = () => {
          const items = new Map<string, string>()
          return {
            getItem: (k: string) => items.get(k) ?? null,
            setItem: (k: string, v: string) => void items.set(k, String(v)),
            removeItem: (k: string) => void items.delete(k)
          }
        }
        const location = {
          href: `${ORIGIN}/offer?utm_source=newsletter&svc_lt=${token}`,
          protocol: "https:",
          hostname: "shop.example.com"
        }
        const window = {
          navigator: { sendBeacon: (_url: string, body: string) => (beacons.push(body), true) },
          location,
          history: {
            state: null,
            pushState: () => undefined,
            replaceState: (_state: unknown, _title: string, url: string) => {
              replaced.push(url)
              location.href = url
            }
          },
          addEventListener: () => undefined,
          crypto: globalThis.crypto,
          localStorage: storage(),
          sessionStorage: storage()
        }
        new Function("window", "document", snippet.text)(window, { cookie: "", referrer: "" })
        assert.deepStrictEqual(replaced, [`${ORIGIN}/offer?utm_source=newsletter`])
        // A later event of the same visit (on a URL without the token) still carries it.
        const svc = (window as unknown as { svc: { track: (type: string) => void } }).svc
        svc.track("signup")
        assert.lengthOf(beacons, 2)
        for (const beacon of beacons) {
          const event = JSON.parse(beacon)
          assert.strictEqual(event.link_token, token)
          assert.notInclude(event.url, "svc_lt")
          const response = yield* collect(beacon)
          assert.strictEqual(response.status, 204, response.text)
        }
        const touches = yield* touchesOf(f)
        assert.lengthOf(touches, 2)
        for (const touch of touches) {
          assert.strictEqual(touch.customer_id, id)
          assert.strictEqual(touch.join_method, "link_token")
        }

        // A token sent in the page URL itself (another sender) is never stored with the URL.
        const direct = yield* collect(pageView(site.trackingKey, { url: `${ORIGIN}/p?svc_lt=${token}&a=1`, link_token: token }))
        assert.strictEqual(direct.status, 204)
        const last = (yield* touchesOf(f)).at(-1)
        assert.strictEqual(last?.customer_id, id)
        assert.strictEqual(last?.url, `${ORIGIN}/p?a=1`)
      }))

    it.effect("a merged customer's token binds the survivor; an erased customer's token stops binding (touch recorded unbound)", () =>
      Effect.gen(function*() {
        const f = yield* seed
        const site = yield* tracked(f)
        const merged = yield* customer(f.profileId, "m-1")
        const survivor = yield* customer(f.profileId, "s-1")
        const mergedToken = yield* tokenFor(f.writer, { customer_key: "m-1" })
        yield* merge(merged, survivor)
        assert.strictEqual((yield* collect(pageView(site.trackingKey, { link_token: mergedToken }))).status, 204)

        const doomed = yield* customer(f.profileId, "e-1")
        const doomedToken = yield* tokenFor(f.writer, { customer_key: "e-1" })
        assert.strictEqual((yield* collect(pageView(site.trackingKey, { link_token: doomedToken }))).status, 204)
        yield* erase(f.profileId, doomed)
        assert.strictEqual((yield* collect(pageView(site.trackingKey, { link_token: doomedToken }))).status, 204)

        const touches = yield* touchesOf(f)
        assert.deepStrictEqual(
          touches.map((touch) => [touch.customer_id, touch.join_method]),
          [[survivor, "link_token"], [doomed, "link_token"], [null, null]]
        )
      }))

    it.effect("a tampered, expired, foreign-secret, other profile's or non-string token is ignored: 204, touch recorded unbound", () =>
      Effect.gen(function*() {
        const f = yield* seed
        const site = yield* tracked(f)
        const id = yield* customer(f.profileId, "t-1")
        const token = yield* tokenFor(f.writer, { customer_key: "t-1" })
        const flip = (text: string, at: number) =>
          text.slice(0, at) + (text[at] === "A" ? "B" : "A") + text.slice(at + 1)
        const other = yield* seed
        const theirCustomer = yield* customer(other.profileId, "t-1")
        const now = Math.floor(Date.now() / 1000)
        const ignored: ReadonlyArray<unknown> = [
          flip(token, 40), // inside the encrypted ids
          flip(token, 10), // the iv
          flip(token, token.length - 3), // the signature
          flip(token, 5), // the expiry
          `${token}A`,
          token.slice(0, 40),
          mintLinkToken(KEYS, { profileId: f.profileId, customerId: id, expiresAt: now - 1 }),
          mintLinkToken(deriveLinkTokenKeys("another-deployment-secret-0123456789"), {
            profileId: f.profileId,
            customerId: id,
            expiresAt: now + 3600
          }),
          yield* tokenFor(other.writer, { customer_key: "t-1" }),
          // Signed correctly, for this profile, naming the other profile's customer.
          mintLinkToken(KEYS, { profileId: f.profileId, customerId: theirCustomer, expiresAt: now + 3600 }),
          // Signed correctly, for the other profile, naming this profile's customer.
          mintLinkToken(KEYS, { profileId: other.profileId, customerId: id, expiresAt: now + 3600 }),
          12345,
          { token },
          ""
        ]
        for (const linkToken of ignored) {
          const response = yield* collect(pageView(site.trackingKey, { link_token: linkToken }))
          assert.strictEqual(response.status, 204, `${JSON.stringify(linkToken)}: ${response.text}`)
        }
        const touches = yield* touchesOf(f)
        assert.lengthOf(touches, ignored.length)
        for (const touch of touches) assert.deepStrictEqual([touch.customer_id, touch.join_method], [null, null])
        // The untouched token still binds (the cases above failed for their own reason).
        assert.strictEqual((yield* collect(pageView(site.trackingKey, { link_token: token }))).status, 204)
        assert.strictEqual((yield* touchesOf(f)).at(-1)?.customer_id, id)
      }))
  })
})

layer(serveApp(testSettings({ baseUrl: BASE_URL, linkTokenSecret: Option.none() })).pipe(Layer.provide(workerOff)), {
  timeout: "90 seconds",
  excludeTestServices: true
})("link tokens without a secret", (it) => {
  it.effect("503 link_tokens_disabled in the error envelope; the collector ignores tokens and still stores the touch", () =>
    Effect.gen(function*() {
      const f = yield* seed
      yield* customer(f.profileId, "off-1")
      const response = yield* mint(f.writer, { selectors: [{ customer_key: "off-1" }] })
      assert.strictEqual(response.status, 503, response.text)
      assert.strictEqual(response.json.error.code, "link_tokens_disabled")
      assert.strictEqual(response.json.error.status, 503)
      assert.isString(response.json.error.request_id)

      const site = yield* tracked(f)
      const id = yield* Effect.flatMap(SqlClient, (sql) =>
        sql<{ id: string }>`SELECT id::text AS id FROM customers WHERE profile_id = ${f.profileId}`)
      const token = mintLinkToken(KEYS, {
        profileId: f.profileId,
        customerId: id[0]?.id ?? "",
        expiresAt: Math.floor(Date.now() / 1000) + 3600
      })
      assert.strictEqual((yield* collect(pageView(site.trackingKey, { link_token: token }))).status, 204)
      const touches = yield* touchesOf(f)
      assert.deepStrictEqual(touches.map((touch) => [touch.customer_id, touch.join_method]), [[null, null]])
    }))
})
