/**
 * `EntitlementsSet` (decision 0096): an internal service with `entitlements:write` turns the
 * attribution add-on on and off as the provisioning app's route does, audited with the credential.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { makeServiceClient } from "../../src/rpc/client.ts"
import { type MintRpcCredential, RpcCredentials } from "../../src/rpc/credentials/service.ts"
import { serveApp, TestServer, testSettings } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedProfile } from "../support/tenancy.ts"

const mint = (input: MintRpcCredential) =>
  Effect.flatMap(RpcCredentials, (credentials) => credentials.mint(input)).pipe(Effect.provide(RpcCredentials.layer))

const client = (secret: string) =>
  Effect.flatMap(TestServer, ({ url }) => makeServiceClient({ url, credential: secret }))

const auditsOf = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ action: string; actor_kind: string; actor_id: string | null }>`
      SELECT action, actor_kind, actor_id FROM audit_events
      WHERE profile_id = ${profileId} AND action LIKE 'entitlement.%' ORDER BY occurred_at`)

const enabledOf = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ enabled: boolean }>`SELECT enabled FROM entitlements WHERE profile_id = ${profileId}`)

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("RPC EntitlementsSet", (it) => {
  describe("entitlements", () => {
    it.effect("turns the add-on on and off like the app's route, audited with the service credential", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Entitlements partner")
        const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })
        assert.strictEqual(created.status, 201, created.text)
        const profileId = String(created.json.data.profile_id)
        const minted = yield* mint({ name: "billing", scopes: ["entitlements:write"], profileIds: [profileId] })
        const rpc = yield* client(minted.secret)
        const on = yield* rpc.EntitlementsSet({ profile_id: profileId, feature: "svc_attribution", change: { enabled: true } })
        assert.deepStrictEqual(on.data, { profile_id: profileId, feature: "svc_attribution", enabled: true, changed: true })
        const again = yield* rpc.EntitlementsSet({ profile_id: profileId, feature: "svc_attribution", change: { enabled: true } })
        assert.strictEqual(again.data.changed, false)
        // The app's own route sees the state the service set.
        const http = yield* asApp(app, `/api/v1/profiles/${profileId}/entitlements/svc_attribution`, "PUT", { enabled: false })
        assert.strictEqual(http.status, 200, http.text)
        assert.strictEqual(http.json.data.changed, true)
        assert.deepStrictEqual((yield* auditsOf(profileId)).map((row) => ({ ...row })), [
          { action: "entitlement.enabled", actor_kind: "service", actor_id: minted.credential.id },
          { action: "entitlement.disabled", actor_kind: "app_client", actor_id: app.id }
        ])
      }))

    it.effect("needs entitlements:write; a profile no app provisioned is not found; nothing changes", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Entitlements partner 2")
        const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })
        const profileId = String(created.json.data.profile_id)
        const reader = yield* mint({ name: "reader", scopes: ["events:write"] })
        const refused = yield* Effect.flip((yield* client(reader.secret)).EntitlementsSet({
          profile_id: profileId,
          feature: "svc_attribution",
          change: { enabled: true }
        }))
        assert.strictEqual(refused._tag, "InsufficientScope")
        assert.strictEqual(refused._tag === "InsufficientScope" ? refused.reason : undefined, "missing_scope:entitlements:write")
        assert.deepStrictEqual((yield* enabledOf(profileId)).map((row) => row.enabled), [false])

        const personal = yield* seedProfile()
        const writer = yield* mint({ name: "billing", scopes: ["entitlements:write"] })
        const missing = yield* Effect.flip((yield* client(writer.secret)).EntitlementsSet({
          profile_id: personal.profileId,
          feature: "svc_attribution",
          change: { enabled: true }
        }))
        assert.strictEqual(missing._tag, "NotFound")
        assert.deepStrictEqual(yield* auditsOf(profileId), [])
      }))
  })
})
