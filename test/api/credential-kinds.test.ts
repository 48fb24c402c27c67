/**
 * Every operation of the published description, called with every credential kind it does not
 * accept (and with none): a 401 or 403 in the error envelope, never a 500 and never a success.
 * Walks /api/v1/openapi.json, so routes added later are covered without editing this file.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { registerApp } from "../support/partner.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

type Kind = "api_key" | "user_token" | "app_client" | "session" | "operator"

const fill = (path: string) => path.replace(/\{[^}]+\}/g, () => crypto.randomUUID())

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("credential kinds", (it) => {
  it.effect("a credential kind an operation does not accept is 401/403 in the envelope on every /api/v1 operation", () =>
    Effect.gen(function*() {
      const profile = yield* seedProfile()
      const { key } = yield* seedApiKey(profile, { scopes: ["analytics:read", "connections:read", "profiles:write"] })
      const session = yield* seedMemberSession(profile, "owner")
      const token = mintSecret(CredentialPrefix.userToken)
      const sql = yield* SqlClient
      yield* sql`INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants)
                 VALUES (${crypto.randomUUID()}, ${session.userId}, 'svc_user_x', ${secretDigest(token)},
                         ${["mcp:read", "mcp:read_pii", "mcp:write"]})`
      const app = yield* registerApp()
      const headersOf: Record<Kind, Record<string, string>> = {
        api_key: { authorization: `Bearer ${key}` },
        user_token: { authorization: `Bearer ${token}` },
        app_client: { authorization: app.basic },
        session: session.headers,
        operator: { authorization: `Bearer ${OPERATOR_TOKEN}` }
      }
      const spec = (yield* call("/api/v1/openapi.json")).json
      let checked = 0
      for (const [path, item] of Object.entries<Record<string, any>>(spec.paths)) {
        if (!path.startsWith("/api/v1/")) continue
        for (const [method, operation] of Object.entries<any>(item)) {
          const accepted: ReadonlyArray<string> = operation["x-auth"] ?? []
          if (accepted.length === 0) continue
          const url = `${fill(path)}?profile_id=${profile.profileId}&workspace_id=${profile.workspaceId}`
          const refused = (Object.keys(headersOf) as Array<Kind>).filter((kind) => !accepted.includes(kind))
          for (const kind of [...refused, undefined]) {
            const response = yield* call(url, {
              method: method.toUpperCase(),
              headers: { ...(kind === undefined ? {} : headersOf[kind]), "content-type": "application/json" },
              ...(method === "get" || method === "delete" ? {} : { body: "{}" })
            })
            const where = `${method.toUpperCase()} ${path} as ${kind ?? "nobody"}`
            // Retired routes answer 410 before any credential is looked at.
            assert.include([401, 403, 410], response.status, where)
            assert.isString(response.json?.error?.code, where)
            assert.strictEqual(response.json.error.status, response.status, where)
            if (kind === undefined && response.status !== 410) assert.strictEqual(response.status, 401, where)
            checked++
          }
        }
      }
      assert.isAbove(checked, 50)
    }))
})
