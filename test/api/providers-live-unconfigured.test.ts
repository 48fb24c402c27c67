/**
 * Live provider mode with no `SVC_PROVIDER_<KIND>_*` settings, as a production-shaped start gets by
 * default (decision 0105): the service answers, no provider is offered, the sandboxes are not
 * served, and every provider route answers a documented 4xx that writes nothing (never a 5xx).
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { PROVIDER_KINDS } from "../../src/connections/providers/registry.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const settings = testSettings()
const live = testSettings({ providers: { ...settings.providers, mode: "live", servesSandbox: false } })

const counts = Effect.gen(function*() {
  const sql = yield* SqlClient
  const [row] = yield* sql<{ handoffs: number; connections: number; pending: number; events: number }>`
    SELECT (SELECT count(*)::int FROM connect_handoffs) AS handoffs,
           (SELECT count(*)::int FROM connections) AS connections,
           (SELECT count(*)::int FROM pending_connections) AS pending,
           (SELECT count(*)::int FROM provider_events) AS events`
  return row
})

layer(serveApp(live), { timeout: "60 seconds", excludeTestServices: true })("live providers, none configured", (it) => {
  it.effect("the service is ready and serves no /sandbox/: _state, _faults and the consent page answer 404", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* call("/readyz")).status, 200)
      for (const provider of PROVIDER_KINDS) {
        const state = yield* call(`/sandbox/${provider}/_state`)
        assert.strictEqual(state.status, 404, provider)
        assert.strictEqual(state.json.error.code, "not_found", provider)
      }
      const faults = yield* call("/sandbox/adplatform/_faults", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ revoke_tokens: true })
      })
      assert.strictEqual(faults.status, 404)
      assert.strictEqual((yield* call("/sandbox/adplatform/oauth/authorize")).status, 404)
    }))

  it.effect("a hand-off for any provider is 404 unknown_provider and writes nothing; the connection list is empty", () =>
    Effect.gen(function*() {
      const profile = yield* seedProfile()
      const { key } = yield* seedApiKey(profile, { scopes: ["connections:read", "connections:write"] })
      const before = yield* counts
      for (const provider of PROVIDER_KINDS) {
        const minted = yield* call(`/api/v1/connections/${provider}/handoff`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(provider === "commerce" ? { shop: "demo.shop.example" } : {})
        })
        assert.strictEqual(minted.status, 404, `${provider}: ${minted.text}`)
        assert.strictEqual(minted.json.error.code, "not_found", provider)
        assert.strictEqual(minted.json.error.reason, "unknown_provider", provider)
      }
      const listed = yield* call("/api/v1/connections", { headers: { authorization: `Bearer ${key}` } })
      assert.strictEqual(listed.status, 200, listed.text)
      assert.deepStrictEqual(listed.json.data, [])
      const pending = yield* call("/api/v1/connections/pending/adplatform", { headers: { authorization: `Bearer ${key}` } })
      assert.strictEqual(pending.status, 200, pending.text)
      assert.deepStrictEqual(pending.json.data, [])
      assert.deepStrictEqual(yield* counts, before)
    }))

  it.effect("a provider callback is 404 unknown_provider, a return to /connect the 400 page, and neither writes", () =>
    Effect.gen(function*() {
      const before = yield* counts
      for (const provider of PROVIDER_KINDS) {
        const hook = yield* call(`/hooks/${provider}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ object: "page", entry: [] })
        })
        assert.strictEqual(hook.status, 404, `${provider}: ${hook.text}`)
        assert.strictEqual(hook.json.error.reason, "unknown_provider", provider)
        const back = yield* call(`/connect/${provider}/callback?code=c&state=s`, { redirect: "manual" })
        // The person's browser gets the hand-off's error page (no hand-off has this state).
        assert.strictEqual(back.status, 400, `${provider}: ${back.text}`)
        assert.include(back.headers.get("content-type") ?? "", "text/html")
      }
      assert.deepStrictEqual(yield* counts, before)
    }))
})
