/**
 * Tenancy fixtures written straight to the database, for tests of routes whose credentials
 * are minted by routes of their own (so each test stays about the route it tests).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"

export interface SeededProfile {
  readonly workspaceId: string
  readonly profileId: string
}

export const seedProfile = Effect.fn("test.seedProfile")(function*(options: { readonly name?: string } = {}) {
  const sql = yield* SqlClient
  const workspaceId = crypto.randomUUID()
  const profileId = crypto.randomUUID()
  yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, ${options.name ?? "Test workspace"})`
  yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, ${options.name ?? "Test profile"})`
  return { workspaceId, profileId } satisfies SeededProfile
})

export const seedApiKey = Effect.fn("test.seedApiKey")(function*(
  profile: SeededProfile,
  options: { readonly scopes: ReadonlyArray<string>; readonly expiresInSeconds?: number; readonly rateLimitPerMinute?: number }
) {
  const sql = yield* SqlClient
  const key = mintSecret(CredentialPrefix.apiKey)
  const id = crypto.randomUUID()
  yield* sql`
    INSERT INTO api_keys (id, profile_id, workspace_id, prefix, secret_hash, scopes, rate_limit_per_minute, expires_at)
    VALUES (${id}, ${profile.profileId}, ${profile.workspaceId}, ${displayPrefix(key, CredentialPrefix.apiKey)},
            ${secretDigest(key)}, ${options.scopes}, ${options.rateLimitPerMinute ?? 60},
            ${options.expiresInSeconds === undefined ? null : new Date(Date.now() + options.expiresInSeconds * 1000)})`
  return { id, key }
})

/** A person with a membership in the profile's workspace and a signed-in session. */
export const seedMemberSession = Effect.fn("test.seedMemberSession")(function*(
  profile: SeededProfile,
  role: "owner" | "admin" | "analyst" | "guest"
) {
  const sql = yield* SqlClient
  const userId = crypto.randomUUID()
  yield* sql`INSERT INTO users (id, email) VALUES (${userId}, ${`${userId}@people.example`})`
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${profile.workspaceId}, ${userId}, ${role})`
  const session = mintSecret(CredentialPrefix.session)
  const csrfToken = crypto.randomUUID()
  yield* sql`
    INSERT INTO sessions (id, user_id, secret_hash, csrf_token_hash, expires_at)
    VALUES (${crypto.randomUUID()}, ${userId}, ${secretDigest(session)}, ${secretDigest(csrfToken)},
            now() + interval '1 hour')`
  const cookie = `svc_session=${session}`
  /** What a browser sends: the cookie, and the CSRF token the console holds (needed on unsafe methods). */
  return { userId, cookie, csrfToken, headers: { cookie, "x-csrf-token": csrfToken } }
})
