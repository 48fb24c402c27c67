import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CURRENT_DPA_VERSION } from "../../schema/dpa.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { asApp, type PartnerApp, registerApp } from "../support/partner.ts"
import { seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

/** A profile the app did not provision but holds a live grant on. */
const grantedProfile = Effect.fn("test.grantedProfile")(function*(app: PartnerApp) {
  const sql = yield* SqlClient
  const profile = yield* seedProfile({ name: "Merchant the app did not provision" })
  yield* sql`INSERT INTO grants (id, app_id, profile_id, connect_scopes)
             VALUES (${crypto.randomUUID()}, ${app.id}, ${profile.profileId}, ${["connections"]})`
  return profile
})

const mint = (app: PartnerApp, profile: SeededProfile, extra: Record<string, unknown> = {}) =>
  asApp(app, "/api/v1/legal/dpa/handoff", "POST", { profile_id: profile.profileId, ...extra })

/** The minted URL's path and query, on the test server. */
const pathOf = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

const tokenOf = (url: string) => new URL(url).searchParams.get("token") ?? ""

const submit = (cookie: string | null, token: string, version: string, headers: Record<string, string> = {}) =>
  call("/legal/dpa/handoff", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie === null ? {} : { cookie }), ...headers },
    body: new URLSearchParams({ token, version }).toString()
  })

const storedDpa = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ dpa_status: string; dpa_version: string | null; dpa_accepted_by: string | null }>`
        SELECT dpa_status, dpa_version, dpa_accepted_by FROM profiles WHERE id = ${profileId}`,
      (rows) => rows[0]
    ))

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("DPA hand-off", (it) => {
  describe("POST /api/v1/legal/dpa/handoff", () => {
    it.effect("mint -> open -> signed-in owner accepts -> DPA accepted; the link is then used up", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Hand-off partner")
        const profile = yield* grantedProfile(app)
        const minted = yield* mint(app, profile)
        assert.strictEqual(minted.status, 200, minted.text)
        const data = minted.json.data
        assert.strictEqual(data.profile_id, profile.profileId)
        assert.strictEqual(data.dpa_version, CURRENT_DPA_VERSION)
        assert.match(data.url, /\/legal\/dpa\/handoff\?token=[A-Za-z0-9]{43}$/)
        const days = (Date.parse(data.expires_at) - Date.now()) / 86_400_000
        assert.isTrue(days > 6.9 && days <= 7.01, data.expires_at)

        const owner = yield* seedMemberSession(profile, "owner")
        const page = yield* call(pathOf(data.url), { headers: { cookie: owner.cookie } })
        assert.strictEqual(page.status, 200, page.text)
        assert.include(page.headers.get("content-type") ?? "", "text/html")
        assert.strictEqual(page.headers.get("cache-control"), "no-store")
        assert.include(page.text, "Data Processing Agreement")
        assert.include(page.text, CURRENT_DPA_VERSION)
        assert.include(page.text, profile.profileId)

        const accepted = yield* submit(owner.cookie, tokenOf(data.url), CURRENT_DPA_VERSION)
        assert.strictEqual(accepted.status, 200, accepted.text)
        assert.include(accepted.text, "DPA accepted")
        const stored = yield* storedDpa(profile.profileId)
        assert.deepStrictEqual(stored, { dpa_status: "accepted", dpa_version: CURRENT_DPA_VERSION, dpa_accepted_by: owner.userId })

        // Through the ordinary read: the profile's effective DPA is its own, accepted.
        const read = yield* call(`/api/v1/profiles/${profile.profileId}/dpa`, { headers: { cookie: owner.cookie } })
        assert.strictEqual(read.status, 200, read.text)
        assert.strictEqual(read.json.data.dpa_status, "accepted")
        assert.strictEqual(read.json.data.dpa_source, "profile")

        // Single use: the page and the form now answer the unusable-link page.
        const again = yield* call(pathOf(data.url), { headers: { cookie: owner.cookie } })
        assert.strictEqual(again.status, 400)
        assert.include(again.text, "unknown, expired or already used")
        const twice = yield* submit(owner.cookie, tokenOf(data.url), CURRENT_DPA_VERSION)
        assert.strictEqual(twice.status, 400)
      }))

    it.effect("a profile the app neither provisioned nor holds a grant on is 404 and mints nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const app = yield* registerApp("Stranger")
        const profile = yield* seedProfile()
        const response = yield* mint(app, profile)
        assert.strictEqual(response.status, 404, response.text)
        assert.strictEqual(response.json.error.code, "not_found")
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM dpa_handoffs WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(rows[0]?.n, 0)
      }))

    it.effect("bad input is 400 validation_error; no app credential is 401", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Validator")
        const profile = yield* grantedProfile(app)
        const notUuid = yield* asApp(app, "/api/v1/legal/dpa/handoff", "POST", { profile_id: "nope" })
        assert.strictEqual(notUuid.status, 400, notUuid.text)
        assert.strictEqual(notUuid.json.error.code, "validation_error")
        const tooLong = yield* mint(app, profile, { expires_in_minutes: 31 * 24 * 60 })
        assert.strictEqual(tooLong.status, 400, tooLong.text)
        const anonymous = yield* call("/api/v1/legal/dpa/handoff", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ profile_id: profile.profileId })
        })
        assert.strictEqual(anonymous.status, 401)
      }))
  })

  describe("the hand-off page", () => {
    it.effect("no session, an analyst, or a cross-site post cannot accept, and none of them burns the link", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Guarded")
        const profile = yield* grantedProfile(app)
        const minted = yield* mint(app, profile)
        const url = String(minted.json.data.url)
        const token = tokenOf(url)

        const anonymous = yield* call(pathOf(url))
        assert.strictEqual(anonymous.status, 400)
        assert.include(anonymous.text, "Sign in to the console")

        const analyst = yield* seedMemberSession(profile, "analyst")
        const refused = yield* submit(analyst.cookie, token, CURRENT_DPA_VERSION)
        assert.strictEqual(refused.status, 400)
        assert.include(refused.text, "not an owner or admin")

        const owner = yield* seedMemberSession(profile, "admin")
        const crossSite = yield* submit(owner.cookie, token, CURRENT_DPA_VERSION, { origin: "https://evil.example" })
        assert.strictEqual(crossSite.status, 400)
        assert.include(crossSite.text, "another site")

        const wrongVersion = yield* submit(owner.cookie, token, "1999-01-01.dpa.v0")
        assert.strictEqual(wrongVersion.status, 400)
        assert.include(wrongVersion.text, "Accept the Data Processing Agreement")
        assert.strictEqual((yield* storedDpa(profile.profileId))?.dpa_status, "not_accepted")

        const sameSite = yield* submit(owner.cookie, token, CURRENT_DPA_VERSION, { "sec-fetch-site": "same-site" })
        assert.strictEqual(sameSite.status, 400)
        assert.include(sameSite.text, "another site")

        // The page sends no referrer, so a browser's own post says Origin: null (decision 0107).
        const accepted = yield* submit(owner.cookie, token, CURRENT_DPA_VERSION, { "sec-fetch-site": "same-origin", origin: "null" })
        assert.strictEqual(accepted.status, 200, accepted.text)
        assert.strictEqual((yield* storedDpa(profile.profileId))?.dpa_status, "accepted")
      }))
  })
})
