/**
 * Data-source datasets (issue 20 part 4) over real HTTP against the sandboxes served by the app:
 * the three ensure routes, their 409s answered before any ad-platform call (the sandbox's write
 * count does not move), 201 then 200 on a repeat, the website attaching an existing pixel only.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, callAs, TestServer } from "../support/app.ts"
import { driveConsent, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "exports:read", "exports:write"]

const send = callAs

const hop = (target: string) =>
  Effect.promise(async () => {
    const response = await fetch(target, { redirect: "manual" })
    await response.text()
  })

interface Fixture extends SeededProfile {
  readonly key: string
}

const newProfile = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies Fixture
})

/** Connects `provider`; with `account` the two-account consent is finalized on that account. */
const connect = (fixture: Fixture, provider: string, account?: string) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const minted = yield* send(fixture.key, "POST", `/api/v1/connections/${provider}/handoff`, { return_url: `${url}/done` })
    assert.strictEqual(minted.status, 201, minted.text)
    const consent = yield* driveConsent(minted.json.data.start_url, { persona: account === undefined ? "one_account" : "two_accounts" })
    yield* hop(consent.location ?? "")
    if (account !== undefined) {
      const finalized = yield* send(fixture.key, "POST", `/api/v1/connections/pending/${provider}/finalize`, { account_id: account })
      assert.strictEqual(finalized.status, 200, finalized.text)
      return
    }
    const poll = yield* send(fixture.key, "GET", `/api/v1/connections/handoffs/${minted.json.data.handoff_id}`)
    assert.strictEqual(poll.json.data.status, "success", poll.text)
  })

/** The ad platform's accounts and write count in the sandbox world of `key`'s profile (decision 0109). */
const adWrites = (key: string) =>
  Effect.map(call("/sandbox/adplatform/_state", { method: "GET", headers: keyAuth(key) }), (r) => {
    assert.strictEqual(r.status, 200, r.text)
    return JSON.stringify(r.json.accounts) + r.json.write_count
  })

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("data sources", (it) => {
  describe("whatsapp/ensure", () => {
    it.effect("409 chat_app_a_connection_required before any ad-platform call; then 201 created and wired, 200 on a repeat", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile
        yield* connect(fixture, "adplatform")
        const before = yield* adWrites(fixture.key)
        const refused = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/whatsapp/ensure", {})
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "chat_app_a_connection_required")
        assert.strictEqual(yield* adWrites(fixture.key), before, "no ad-platform write")

        yield* connect(fixture, "chat_app_a")
        const created = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/whatsapp/ensure", {})
        assert.strictEqual(created.status, 201, created.text)
        assert.strictEqual(created.json.data.created, true)
        const again = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/whatsapp/ensure", {})
        assert.strictEqual(again.status, 200, again.text)
        assert.strictEqual(again.json.data.created, false)
        assert.strictEqual(again.json.data.dataset_id, created.json.data.dataset_id)
        const destinations = yield* send(fixture.key, "GET", "/api/v1/exports/destinations")
        const wired = destinations.json.data.find((d: any) => d.id === created.json.data.destination_id)
        assert.strictEqual(wired.kind, "adplatform_capi_messaging")
        assert.strictEqual(wired.dataset_id, created.json.data.dataset_id)
      }))
  })

  describe("instagram/ensure", () => {
    it.effect("409 social_dm_connection_required, 409 social_dm_login_required on a page login, both before any ad-platform call", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile
        yield* connect(fixture, "adplatform")
        const before = yield* adWrites(fixture.key)
        const none = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/instagram/ensure", {})
        assert.strictEqual(none.status, 409, none.text)
        assert.strictEqual(none.json.error.code, "social_dm_connection_required")

        yield* connect(fixture, "social_dm", "sdm_acct_0002")
        const wrongLogin = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/instagram/ensure", {})
        assert.strictEqual(wrongLogin.status, 409, wrongLogin.text)
        assert.strictEqual(wrongLogin.json.error.code, "social_dm_login_required")
        assert.strictEqual(yield* adWrites(fixture.key), before, "no ad-platform write")
      }))

    it.effect("a business-login account gets its dataset: 201 then 200", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile
        yield* connect(fixture, "adplatform")
        yield* connect(fixture, "social_dm")
        const created = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/instagram/ensure", { dataset_name: "Social" })
        assert.strictEqual(created.status, 201, created.text)
        const again = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/instagram/ensure", {})
        assert.strictEqual(again.status, 200, again.text)
        assert.strictEqual(again.json.data.dataset_id, created.json.data.dataset_id)
      }))
  })

  describe("website/ensure", () => {
    it.effect("attaches the account's existing pixel (never creates one); an unknown pixel is 422", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile
        yield* connect(fixture, "adplatform")
        const before = yield* adWrites(fixture.key)
        const unknown = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/website/ensure", { pixel_id: "px_nope" })
        assert.strictEqual(unknown.status, 422, unknown.text)
        assert.strictEqual(unknown.json.error.code, "validation_error")
        const attached = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/website/ensure", {})
        assert.strictEqual(attached.status, 201, attached.text)
        assert.strictEqual(attached.json.data.dataset_id, "px_1001")
        assert.deepStrictEqual(attached.json.data.selectable_pixels.map((p: any) => p.id), ["px_1001"])
        const again = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/website/ensure", { pixel_id: "px_1001" })
        assert.strictEqual(again.status, 200, again.text)
        assert.strictEqual(yield* adWrites(fixture.key), before, "no pixel or dataset was created")
      }))
  })
  describe("data-sources, options, datasets", () => {
    it.effect("lists each source's wiring, blockers and sharing; options; POST datasets runs the source's ensure", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile
        const empty = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/data-sources")
        assert.strictEqual(empty.status, 200, empty.text)
        assert.deepStrictEqual(empty.json.data.map((s: any) => [s.source, s.wired, s.blockers]), [
          ["whatsapp", false, ["adplatform_connection_required", "chat_app_a_connection_required"]],
          ["website", false, ["adplatform_connection_required"]],
          ["instagram", false, ["adplatform_connection_required", "social_dm_connection_required"]]
        ])
        yield* connect(fixture, "adplatform")
        const options = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/data-source-options")
        assert.strictEqual(options.status, 200, options.text)
        assert.deepStrictEqual(options.json.data.map((o: any) => [o.source, o.connected, o.action]), [
          ["whatsapp", false, "create_dataset"],
          ["website", true, "attach_pixel"],
          ["instagram", false, "create_dataset"]
        ])
        const created = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/datasets", { source: "website" })
        assert.strictEqual(created.status, 201, created.text)
        const again = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/datasets", { source: "website" })
        assert.strictEqual(again.status, 200, again.text)

        // A sibling profile of the workspace on the same pixel: shared, with the neutral warning.
        const sql = yield* SqlClient
        const sibling = { workspaceId: fixture.workspaceId, profileId: crypto.randomUUID() }
        yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${sibling.profileId}, ${fixture.workspaceId}, 'Sibling')`
        const siblingKey = (yield* seedApiKey(sibling, { scopes: SCOPES, rateLimitPerMinute: 10_000 })).key
        yield* connect({ ...sibling, key: siblingKey }, "adplatform")
        const siblingWired = yield* send(siblingKey, "POST", "/api/v1/conversion-sync/datasets", { source: "website" })
        assert.strictEqual(siblingWired.status, 201, siblingWired.text)
        const listed = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/data-sources")
        const website = listed.json.data.find((s: any) => s.source === "website")
        assert.strictEqual(website.wired, true)
        assert.strictEqual(website.dataset_id, "px_1001")
        assert.deepStrictEqual(website.shared_with_profiles, [sibling.profileId])
        assert.strictEqual(website.warning, "meta_destination_shared")
        assert.deepStrictEqual(website.export_preview_30d, { outcomes: 0 })
      }))
  })
})
