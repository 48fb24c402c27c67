/**
 * The admin commerce-apps kill switch (decision 0066) over real HTTP against the commerce sandbox
 * served by the app: a store connected through the merchant's registered custom app (the
 * hand-off and the code exchange use that app's credentials, the sandbox accepting its derived
 * secret); `DELETE /api/v1/admin/commerce-apps/{id}` revokes that connection once, stops its
 * push channel and its syncs, its callbacks write nothing, and a new hand-off for the store goes
 * through the platform's app until another custom app is registered.
 */
import { createHmac } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { sandboxCustomAppSecret } from "../../src/connections/providers/endpoints.ts"
import { DEFAULT_SANDBOX_SECRET } from "../../src/platform/config.ts"
import { call, OPERATOR_TOKEN } from "../support/app.ts"
import { connectProvider, runHandoff, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth, worldHandle } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "commerce:read", "commerce:live"]

const operator = (method: string, path: string, body?: unknown) =>
  call(path, {
    method,
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const bearer = (key: string, method: string, path: string, body?: unknown) =>
  call(path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** Registers a custom app for `shop` whose secret is the one the sandbox derives for its client id. */
const registerApp = (shop: string, clientId: string) =>
  Effect.gen(function*() {
    const created = yield* operator("POST", "/api/v1/admin/commerce-apps", {
      shop,
      name: `Custom app of ${shop}`,
      client_id: clientId,
      client_secret: sandboxCustomAppSecret(DEFAULT_SANDBOX_SECRET, "commerce", clientId),
      scopes: ["read_orders", "read_products"]
    })
    assert.strictEqual(created.status, 201, created.text)
    return created.json.data.id as string
  })

const clientIdOf = (startUrl: string) => new URL(startUrl).searchParams.get("client_id")

/** The push subscriptions for `shop` in the key's profile's sandbox world (decision 0109). */
const subscribed = (key: string, shop: string) =>
  Effect.map(call("/sandbox/commerce/_state", { headers: keyAuth(key) }), (state) => {
    assert.strictEqual(state.status, 200, state.text)
    return (state.json.subscriptions as ReadonlyArray<{ account_id: string }>).filter((s) => s.account_id === shop).length
  })

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("commerce apps: the kill switch", (it) => {
  describe("DELETE /api/v1/admin/commerce-apps/{id}", () => {
    it.effect("revokes the store connected through the app once: event, no push channel, no sync, callbacks ignored; the store then connects through the platform app, or a new custom app", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 1000 })
        const shop = `kill-${crypto.randomUUID().slice(0, 8)}`
        const appId = yield* registerApp(shop, `custom-${shop}`)

        // Tokens that expire within the refresh margin: every call refreshes, through the app the grant is of.
        const faults = (body: unknown) =>
          call("/sandbox/commerce/_faults", { method: "POST", headers: { "content-type": "application/json", ...keyAuth(key) }, body: JSON.stringify(body) })
        assert.strictEqual((yield* faults({ token_ttl_seconds: 30 })).status, 200)
        // The hand-off goes to the consent as the custom app, with its scopes.
        const connected = yield* Effect.ensuring(connectProvider(key, "commerce", { shop }), faults({ token_ttl_seconds: 3600 }))
        assert.strictEqual(clientIdOf(connected.handoff.start_url), `custom-${shop}`)
        assert.strictEqual(new URL(connected.handoff.start_url).searchParams.get("scope"), "read_orders read_products")
        const connectionId = connected.connectionId
        const [made] = yield* sql<{ commerce_app_id: string | null }>`SELECT commerce_app_id FROM connections WHERE id = ${connectionId}`
        assert.strictEqual(made?.commerce_app_id, appId)
        assert.strictEqual(yield* subscribed(key, shop), 1)
        // A refresh goes through the custom app (the store refuses the platform app a grant made to another app).
        const live = yield* bearer(key, "GET", "/api/v1/commerce/live/products?limit=1")
        assert.strictEqual(live.status, 200, live.text)
        const [refreshed] = yield* sql<{ expires: string }>`SELECT token_expires_at::text AS expires FROM connections WHERE id = ${connectionId}`
        assert.isAbove(Date.parse(refreshed?.expires ?? "") - Date.now(), 600_000)

        const killed = yield* operator("DELETE", `/api/v1/admin/commerce-apps/${appId}`)
        assert.strictEqual(killed.status, 200, killed.text)
        assert.deepStrictEqual(killed.json.data, { id: appId, disabled: true })

        const [after] = yield* sql<{ status: string; status_reason: string; disconnected: boolean; sealed: boolean }>`
          SELECT status, status_reason, disconnected_at IS NOT NULL AS disconnected, access_token_sealed IS NOT NULL AS sealed
          FROM connections WHERE id = ${connectionId}`
        assert.deepStrictEqual(after, { status: "disconnected", status_reason: "commerce_app_disabled", disconnected: true, sealed: false })
        const revoked = yield* sql<{ reason: string; connection_id: string }>`
          SELECT payload->'data'->>'reason' AS reason, payload->'data'->>'connection_id' AS connection_id
          FROM outbox WHERE profile_id = ${profile.profileId} AND topic = 'connection.revoked'`
        assert.deepStrictEqual(revoked, [{ reason: "commerce_app_disabled", connection_id: connectionId }])
        assert.strictEqual(yield* subscribed(key, shop), 0)
        const listed = yield* bearer(key, "GET", "/api/v1/connections")
        assert.notInclude(listed.json.data.map((c: { id: string }) => c.id), connectionId)

        // No sync: the connection is not one the trigger knows, and nothing is queued for it.
        const named = yield* bearer(key, "POST", "/api/v1/connections/sync", { connection_id: connectionId })
        assert.strictEqual(named.status, 404, named.text)
        const all = yield* bearer(key, "POST", "/api/v1/connections/sync", {})
        assert.strictEqual(all.status, 202, all.text)
        assert.deepStrictEqual(all.json.data, [])
        const [jobs] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM sync_jobs WHERE connection_id = ${connectionId}`
        assert.strictEqual(jobs?.n, 0)

        // A signed callback for the store (as a late delivery, in this profile's sandbox world) writes nothing for the revoked connection.
        const order = { id: `ord_${shop}`, name: "#1", number: 1, status: "created", milestones: [{ status: "created", at: new Date().toISOString() }] }
        const body = JSON.stringify({ id: `late-${shop}`, type: "orders/create", account_id: shop, created_at: new Date().toISOString(), data: { object: order } })
        const hook = yield* call("/hooks/commerce", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-shop-hmac-sha256": createHmac("sha256", sandboxSecretOf("commerce")).update(body, "utf8").digest("base64"),
            "x-sandbox-world": worldHandle(profile.profileId)
          },
          body
        })
        assert.isBelow(hook.status, 300, hook.text)
        const [written] = yield* sql<{ n: number }>`
          SELECT (SELECT count(*) FROM commerce_orders WHERE profile_id = ${profile.profileId})::int
               + (SELECT count(*) FROM outbox WHERE profile_id = ${profile.profileId} AND topic = 'order.status.changed')::int AS n`
        assert.strictEqual(written?.n, 0)

        // A retried DELETE is 404 and writes nothing more.
        assert.strictEqual((yield* operator("DELETE", `/api/v1/admin/commerce-apps/${appId}`)).status, 404)
        const [events] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM outbox WHERE profile_id = ${profile.profileId} AND topic = 'connection.revoked'`
        assert.strictEqual(events?.n, 1)

        // A new hand-off for the store no longer uses the killed app.
        const platform = yield* connectProvider(key, "commerce", { shop })
        assert.strictEqual(clientIdOf(platform.handoff.start_url), "sandbox-commerce")
        const [plain] = yield* sql<{ commerce_app_id: string | null }>`SELECT commerce_app_id FROM connections WHERE id = ${platform.connectionId}`
        assert.isNull(plain?.commerce_app_id ?? null)

        // Registering another app for the store works; the next hand-off goes through it.
        const second = yield* registerApp(shop, `custom2-${shop}`)
        const again = yield* connectProvider(key, "commerce", { shop })
        assert.strictEqual(clientIdOf(again.handoff.start_url), `custom2-${shop}`)
        const [through] = yield* sql<{ commerce_app_id: string | null }>`SELECT commerce_app_id FROM connections WHERE id = ${again.connectionId}`
        assert.strictEqual(through?.commerce_app_id, second)
      }))

    it.effect("a custom app whose secret the store does not accept fails the consent (internal_error) and connects nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 1000 })
        const shop = `wrong-${crypto.randomUUID().slice(0, 8)}`
        const created = yield* operator("POST", "/api/v1/admin/commerce-apps", {
          shop,
          name: "Mistyped secret",
          client_id: `custom-${shop}`,
          client_secret: "not-the-secret",
          scopes: []
        })
        assert.strictEqual(created.status, 201, created.text)
        const run = yield* runHandoff(key, "commerce", { shop })
        assert.strictEqual(run.callback.status, 302)
        assert.strictEqual(new URL(run.callback.location ?? "http://invalid/").searchParams.get("reason"), "internal_error")
        const [n] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM connections WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(n?.n, 0)
      }))
  })
})
