/**
 * `TouchesRecord` (decision 0096): a server-side touch over RPC is the collector's tracker event,
 * recorded with the collector's checks (server-side switch, key of the named profile, time
 * window), idempotent on `event_id`, behind `events:write`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { makeServiceClient } from "../../src/rpc/client.ts"
import { RpcCredentials, type MintRpcCredential } from "../../src/rpc/credentials/service.ts"
import { call, serveApp, TestServer, testSettings } from "../support/app.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const mint = (input: MintRpcCredential) =>
  Effect.flatMap(RpcCredentials, (credentials) => credentials.mint(input)).pipe(Effect.provide(RpcCredentials.layer))

const client = (secret: string) =>
  Effect.flatMap(TestServer, ({ url }) => makeServiceClient({ url, credential: secret, serialization: "msgpack" }))

const send = (path: string, key: string, method: string, body?: unknown) =>
  call(path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A profile with a tracking key; server-side events allowed or not. */
const tracked = (allowServerSide: boolean) =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"], rateLimitPerMinute: 1000 })
    const created = yield* send("/api/v1/tracking/keys", key, "POST")
    assert.strictEqual(created.status, 201, created.text)
    const patched = yield* send("/api/v1/tracking/settings", key, "PATCH", {
      allowed_origins: ["https://shop.example.com"],
      allow_server_side: allowServerSide
    })
    assert.strictEqual(patched.status, 200, patched.text)
    return { profileId: profile.profileId, trackingKey: String(created.json.data.key) }
  })

const touchEvent = (trackingKey: string, extra: Record<string, unknown> = {}) => ({
  tracking_key: trackingKey,
  anonymous_id: "anon_0123456789",
  type: "page_view",
  url: "https://shop.example.com/landing?utm_source=google&utm_medium=cpc&utm_campaign=Winter",
  ...extra
})

const touchesOf = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ event_type: string; source: string; medium: string; campaign_name: string | null; browser: string | null }>`
      SELECT event_type, source, medium, campaign_name, browser FROM touches WHERE profile_id = ${profileId}`)

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("RPC TouchesRecord", (it) => {
  describe("server-side touches", () => {
    it.effect("records the touch as the collector would, once per event_id", () =>
      Effect.gen(function*() {
        const world = yield* tracked(true)
        const { secret } = yield* mint({ name: "touch-relay", scopes: ["events:write"] })
        const rpc = yield* client(secret)
        const event = touchEvent(world.trackingKey, { event_id: "evt_0123456789" })
        const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
        const first = yield* rpc.TouchesRecord({ profile_id: world.profileId, event, user_agent: chrome })
        assert.strictEqual(first.result, "stored")
        const again = yield* rpc.TouchesRecord({ profile_id: world.profileId, event, user_agent: chrome })
        assert.strictEqual(again.result, "duplicate")
        const rows = yield* touchesOf(world.profileId)
        assert.deepStrictEqual(rows.map((row) => ({ ...row })), [
          { event_type: "page_view", source: "google", medium: "cpc", campaign_name: "Winter", browser: "Chrome" }
        ])
        const bot = yield* rpc.TouchesRecord({
          profile_id: world.profileId,
          event: touchEvent(world.trackingKey),
          user_agent: "Googlebot/2.1 (+http://www.google.com/bot.html)"
        })
        assert.strictEqual(bot.result, "dropped_bot")
        assert.strictEqual((yield* touchesOf(world.profileId)).length, 1)
      }))

    it.effect("refuses what the collector refuses, and writes nothing", () =>
      Effect.gen(function*() {
        const closed = yield* tracked(false)
        const other = yield* tracked(true)
        const { secret } = yield* mint({ name: "touch-relay", scopes: ["events:write"] })
        const rpc = yield* client(secret)
        const origin = yield* Effect.flip(rpc.TouchesRecord({ profile_id: closed.profileId, event: touchEvent(closed.trackingKey) }))
        assert.strictEqual(origin._tag, "InsufficientScope")
        assert.strictEqual(origin._tag === "InsufficientScope" ? origin.reason : undefined, "origin_required")
        // another profile's key is an unknown key for this profile
        const foreign = yield* Effect.flip(rpc.TouchesRecord({ profile_id: closed.profileId, event: touchEvent(other.trackingKey) }))
        assert.strictEqual(foreign._tag, "Unauthorized")
        assert.strictEqual(foreign._tag === "Unauthorized" ? foreign.reason : undefined, "tracking_key_invalid")
        const old = yield* Effect.flip(rpc.TouchesRecord({
          profile_id: other.profileId,
          event: touchEvent(other.trackingKey, { occurred_at: "2020-01-01T00:00:00Z" })
        }))
        assert.strictEqual(old._tag, "ValidationError")
        assert.strictEqual((yield* touchesOf(closed.profileId)).length, 0)
        assert.strictEqual((yield* touchesOf(other.profileId)).length, 0)
      }))

    it.effect("needs events:write", () =>
      Effect.gen(function*() {
        const world = yield* tracked(true)
        const { secret } = yield* mint({ name: "reader", scopes: ["conversions:read"] })
        const refused = yield* Effect.flip((yield* client(secret)).TouchesRecord({ profile_id: world.profileId, event: touchEvent(world.trackingKey) }))
        assert.strictEqual(refused._tag, "InsufficientScope")
        assert.strictEqual(refused._tag === "InsufficientScope" ? refused.reason : undefined, "missing_scope:events:write")
      }))
  })
})
