/**
 * The fixture the OpenAPI-driven tests send requests with: a partner app, the profile it
 * provisioned (add-on on), and every credential kind on it with every scope and rate limits out of
 * the way, so that requests reach the handlers.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { McpGrants, Scopes } from "../../schema/scopes.ts"
import { CredentialPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { OPERATOR_TOKEN } from "./app.ts"
import { asApp, type PartnerApp, registerApp } from "./partner.ts"
import { seedApiKey, seedMemberSession } from "./tenancy.ts"

export type Kind = "api_key" | "user_token" | "app_client" | "session" | "operator"

export interface Fixture {
  readonly app: PartnerApp
  readonly workspaceId: string
  readonly profileId: string
  readonly apiKeyId: string
  readonly userId: string
  readonly headers: Readonly<Record<Kind, Readonly<Record<string, string>>>>
}

/**
 * A partner app, the profile it provisioned (add-on on), and every credential kind on it with
 * every scope and rate limits out of the way, so that requests reach the handlers.
 */
export const makeFixture = Effect.gen(function*() {
  const sql = yield* SqlClient
  const app = yield* registerApp("Fuzz partner")
  yield* sql`UPDATE oauth_apps SET rate_tier = 'internal' WHERE id = ${app.id}`
  const tag = crypto.randomUUID().slice(0, 8)
  const provisioned = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `fuzz-${tag}`, email: `owner-${tag}@fuzz.example` })
  assert.strictEqual(provisioned.status, 201, provisioned.text)
  const profile = { workspaceId: String(provisioned.json.data.workspace_id), profileId: String(provisioned.json.data.profile_id) }
  yield* sql`
    INSERT INTO entitlements (profile_id, feature, enabled) VALUES (${profile.profileId}, 'svc_attribution', true)
    ON CONFLICT (profile_id, feature) DO UPDATE SET enabled = true`
  const apiKey = yield* seedApiKey(profile, { scopes: Scopes, rateLimitPerMinute: 1_000_000 })
  const session = yield* seedMemberSession(profile, "owner")
  const userToken = mintSecret(CredentialPrefix.userToken)
  yield* sql`
    INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants, rate_limit_units_per_minute)
    VALUES (${crypto.randomUUID()}, ${session.userId}, 'svc_user_f', ${secretDigest(userToken)}, ${McpGrants}, 1000000)`
  return {
    app,
    ...profile,
    apiKeyId: apiKey.id,
    userId: session.userId,
    headers: {
      api_key: { authorization: `Bearer ${apiKey.key}` },
      user_token: { authorization: `Bearer ${userToken}` },
      app_client: { authorization: app.basic },
      session: session.headers,
      operator: { authorization: `Bearer ${OPERATOR_TOKEN}` }
    }
  } satisfies Fixture
})

