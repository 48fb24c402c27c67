/**
 * RPC test worlds (decisions 0081, 0082): a profile with a purchase definition, an
 * internal-service credential and an API key of the same scopes, and settled outcome events.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type MintRpcCredential, RpcCredentials } from "../../src/rpc/credentials/service.ts"
import { defineConversion } from "./events.ts"
import { seedApiKey, seedProfile } from "./tenancy.ts"

export const ALL_RPC_SCOPES = [
  "events:write",
  "conversions:read",
  "analytics:read",
  "campaigns:read",
  "customers:read",
  "attribution:write"
]

export const mintRpcCredential = (input: MintRpcCredential) =>
  Effect.flatMap(RpcCredentials, (credentials) => credentials.mint(input)).pipe(Effect.provide(RpcCredentials.layer))

/** A profile with a purchase definition, a full-scope credential and an HTTP key of the same scopes. */
export const seedRpcWorld = Effect.fn("test.seedRpcWorld")(function*() {
  const profile = yield* seedProfile()
  yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
  const minted = yield* mintRpcCredential({ name: "billing-worker", scopes: ALL_RPC_SCOPES })
  const { key } = yield* seedApiKey(profile, { scopes: ALL_RPC_SCOPES, rateLimitPerMinute: 1000 })
  return { ...profile, secret: minted.secret, credentialId: minted.credential.id, key }
})

/** Makes the profile's outbox rows old enough for the replay (it answers settled events only). */
export const settleOutbox = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql`UPDATE outbox SET created_at = created_at - interval '1 minute' WHERE profile_id = ${profileId}`)

/** A purchase event with its idempotency key, a value and a customer. */
export const purchaseEvent = (key: string, extra: Record<string, unknown> = {}) => ({
  event_name: "purchase",
  idempotency_key: key,
  occurred_at: "2026-03-01T10:00:00Z",
  properties: { value: "12.50", currency: "EUR" },
  user_traits: { external_id: `c-${key}`, email: `${key}@example.com` },
  ...extra
})
