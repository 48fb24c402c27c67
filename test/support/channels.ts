/**
 * Channel connections for the inbox, email and calendar tests: a profile with a key holding the
 * given scopes, connected to a sandbox provider through the real hand-off and consent.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call } from "./app.ts"
import { connectProvider } from "./providers.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "./tenancy.ts"

export const bearer = (key: string, method = "GET", body?: unknown, headers: Record<string, string> = {}) => ({
  method,
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/** A test-control call on the key's profile's sandbox world (`_state` reads and changes, arrivals; decision 0109). */
export const sandbox = (key: string, provider: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/${provider}/${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A profile with a key holding `scopes` (plus the connect rail's). */
export const channelProfile = Effect.fn("test.channelProfile")(function*(scopes: ReadonlyArray<string>) {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: ["connections:read", "connections:write", ...scopes], rateLimitPerMinute: 1000 })
  return { profile, key }
})

/** Another key of the same profile, with only `scopes`. */
export const narrowKey = (profile: SeededProfile, scopes: ReadonlyArray<string>) =>
  Effect.map(seedApiKey(profile, { scopes, rateLimitPerMinute: 1000 }), (seeded) => seeded.key)

/** Connects `provider` to the key's profile through the hand-off and the sandbox consent (its first account). */
export const connectChannel = Effect.fn("test.connectChannel")(function*(key: string, provider: string) {
  const { connectionId } = yield* connectProvider(key, provider)
  const list = yield* call("/api/v1/connections", bearer(key))
  const connection = list.json.data.find((c: { id: string }) => c.id === connectionId)
  assert.isDefined(connection, list.text)
  assert.strictEqual(connection.status, "active", list.text)
  return connection as { id: string; provider_account_id: string }
})

export const piiRows = (profile: SeededProfile) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ route: string; result: string; actor_kind: string }>`
      SELECT route, result, actor_kind FROM pii_access_log WHERE profile_id = ${profile.profileId} ORDER BY occurred_at, id`)
