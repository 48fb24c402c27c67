/**
 * A small API assembled from the service's real HTTP building blocks (envelope renderer,
 * schema-error mapping, authentication, deprecation table) to exercise them over real HTTP
 * with bodies, scopes and defects before the business domains exist.
 */
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { InternalError, InvalidState } from "../../schema/errors.ts"
import { Idempotency, IdempotencyLayer } from "../../src/http/idempotency.ts"
import { scopesOfMcpGrants } from "../../schema/scopes.ts"
import { CredentialStore, Principal, type PrincipalShape, type ResolvedMembership } from "../../src/kernel/principal.ts"
import { Authentication, AuthenticationLayer } from "../../src/http/auth.ts"
import { EnvelopeLayer } from "../../src/http/envelope.ts"
import { policy } from "../../src/http/policy.ts"
import { SchemaErrors, SchemaErrorsLayer } from "../../src/http/schema-errors.ts"
import { Deprecation, DeprecationLayer } from "../../src/http/versioning/middleware.ts"

const Item = Schema.Struct({ qty: Schema.Int.check(Schema.isGreaterThan(0)) })

export const ProbeApi = HttpApi.make("probe")
  .add(
    HttpApiGroup.make("probe")
      .add(
        HttpApiEndpoint.post("items", "/probe/items", {
          payload: Schema.Struct({ name: Schema.NonEmptyString, items: Schema.Array(Item) }),
          success: Schema.Struct({ data: Schema.Struct({ count: Schema.Int }) })
        }).annotateMerge(policy({ scopes: ["events:write"], auth: ["api_key"], idempotency: "none", grain: "profile" })),
        HttpApiEndpoint.get("query", "/probe/query", {
          query: { limit: Schema.Int },
          success: Schema.Struct({ limit: Schema.Int })
        }).annotateMerge(policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })),
        HttpApiEndpoint.get("defect", "/probe/defect", { error: InternalError.wire })
          .annotateMerge(policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })),
        HttpApiEndpoint.get("heavy", "/probe/heavy", { success: Schema.Struct({ ok: Schema.Boolean }) })
          .annotateMerge(policy({ scopes: [], auth: ["api_key"], idempotency: "none", grain: "profile", cost: 3 })),
        HttpApiEndpoint.get("anyScope", "/probe/any-scope", { success: Schema.Struct({ ok: Schema.Boolean }) })
          .annotateMerge(policy({
            scopes: ["conversions:read", "customers:read"],
            scopeMode: "any",
            auth: ["api_key", "user_token"],
            idempotency: "none",
            grain: "profile"
          })),
        HttpApiEndpoint.post("gatedWrite", "/probe/gated-write", { success: Schema.Struct({ ok: Schema.Boolean }) })
          .annotateMerge(policy({
            scopes: ["events:write"],
            auth: ["api_key", "user_token"],
            idempotency: "none",
            grain: "profile",
            entitlement: "svc_attribution"
          })),
        HttpApiEndpoint.get("profileRead", "/probe/profile-read", {
          success: Schema.Struct({ profile_id: Schema.String, scopes: Schema.Array(Schema.String) })
        }).annotateMerge(policy({ scopes: ["analytics:read"], auth: ["api_key", "user_token"], idempotency: "none", grain: "profile" })),
        HttpApiEndpoint.get("personRead", "/probe/customers", { success: Schema.Struct({ ok: Schema.Boolean }) })
          .annotateMerge(policy({
            scopes: ["customers:read"],
            auth: ["api_key", "user_token"],
            idempotency: "none",
            grain: "profile",
            personData: true
          })),
        HttpApiEndpoint.post("goals", "/goals", { success: Schema.Struct({ ok: Schema.Boolean }) })
          .annotateMerge(policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })),
        HttpApiEndpoint.post("charge", "/probe/charge", {
          payload: Schema.Struct({ amount: Schema.Int, delay_ms: Schema.optionalKey(Schema.Int), fail: Schema.optionalKey(Schema.Boolean) }),
          success: Schema.Struct({ data: Schema.Struct({ charge_number: Schema.Int, amount: Schema.Int }) }).pipe(HttpApiSchema.status(201)),
          error: InvalidState.wire
        }).annotateMerge(policy({ scopes: [], auth: ["api_key"], idempotency: "required", grain: "profile" }))
      )
      .prefix("/api/v1")
  )
  .middleware(SchemaErrors)
  .middleware(Idempotency)
  .middleware(Authentication)
  .middleware(Deprecation)

/** Keys the probe's credential store knows. */
export const probeKeys: Record<string, PrincipalShape> = {
  "svc_live_events": {
    kind: "api_key",
    keyId: "key-events",
    profileId: "00000000-0000-4000-8000-000000000001",
    workspaceId: "00000000-0000-4000-8000-0000000000aa",
    scopes: ["events:write", "conversions:read"],
    oauthAppId: null,
    rateLimitPerMinute: 10,
    attributionEnabled: true
  },
  "svc_live_payments": {
    kind: "api_key",
    keyId: "key-payments",
    profileId: "00000000-0000-4000-8000-000000000002",
    workspaceId: "00000000-0000-4000-8000-0000000000aa",
    scopes: ["events:write"],
    oauthAppId: null,
    rateLimitPerMinute: 10_000,
    attributionEnabled: true
  },
  "svc_live_readonly": {
    kind: "api_key",
    keyId: "key-readonly",
    profileId: "00000000-0000-4000-8000-000000000001",
    workspaceId: "00000000-0000-4000-8000-0000000000aa",
    scopes: ["analytics:read"],
    oauthAppId: null,
    rateLimitPerMinute: 60,
    attributionEnabled: true
  },
  /** A key of an app-provisioned profile on the connect-broker tier (add-on off). */
  "svc_live_broker": {
    kind: "api_key",
    keyId: "key-broker",
    profileId: "00000000-0000-4000-8000-000000000003",
    workspaceId: "00000000-0000-4000-8000-0000000000aa",
    scopes: ["connections:read", "connections:write"],
    oauthAppId: "00000000-0000-4000-8000-0000000000ff",
    rateLimitPerMinute: 60,
    attributionEnabled: false
  },
  /** The same profile's key minted before the add-on went on, used after it did. */
  "svc_live_stale": {
    kind: "api_key",
    keyId: "key-stale",
    profileId: "00000000-0000-4000-8000-000000000004",
    workspaceId: "00000000-0000-4000-8000-0000000000aa",
    scopes: ["connections:read", "connections:write"],
    oauthAppId: "00000000-0000-4000-8000-0000000000ff",
    rateLimitPerMinute: 60,
    attributionEnabled: true
  },
  "svc_user_person": {
    kind: "user_token",
    tokenId: "token-1",
    userId: "user-1",
    scopes: ["customers:read"],
    rateLimitUnitsPerMinute: 100
  },
  /** A token with the mcp:read and mcp:write grants. */
  "svc_user_writer": {
    kind: "user_token",
    tokenId: "token-2",
    userId: "user-2",
    scopes: scopesOfMcpGrants(["mcp:read", "mcp:write"]),
    rateLimitUnitsPerMinute: 100
  }
}

/** Memberships the probe's credential store knows, by `${userId}:${profileId}`. */
export const probeMemberships: Record<string, ResolvedMembership> = {
  /** A workspace whose MCP settings keep token writes off. */
  "user-2:00000000-0000-4000-8000-000000000005": {
    profile: { profileId: "00000000-0000-4000-8000-000000000005", workspaceId: "00000000-0000-4000-8000-0000000000bb", attributionEnabled: true },
    membership: { workspaceRole: "admin", profileRole: null, permissions: null },
    mcpWritebackEnabled: false
  },
  "user-1:00000000-0000-4000-8000-000000000001": {
    profile: { profileId: "00000000-0000-4000-8000-000000000001", workspaceId: "00000000-0000-4000-8000-0000000000aa", attributionEnabled: true },
    membership: { workspaceRole: "guest", profileRole: "viewer", permissions: ["view:customers"] },
    mcpWritebackEnabled: true
  },
  "user-2:00000000-0000-4000-8000-000000000001": {
    profile: { profileId: "00000000-0000-4000-8000-000000000001", workspaceId: "00000000-0000-4000-8000-0000000000aa", attributionEnabled: true },
    membership: { workspaceRole: "guest", profileRole: "viewer", permissions: null },
    mcpWritebackEnabled: true
  },
  "user-2:00000000-0000-4000-8000-000000000002": {
    profile: { profileId: "00000000-0000-4000-8000-000000000002", workspaceId: "00000000-0000-4000-8000-0000000000aa", attributionEnabled: true },
    membership: { workspaceRole: "admin", profileRole: null, permissions: null },
    mcpWritebackEnabled: true
  },
  "user-2:00000000-0000-4000-8000-000000000003": {
    profile: { profileId: "00000000-0000-4000-8000-000000000003", workspaceId: "00000000-0000-4000-8000-0000000000aa", attributionEnabled: false },
    membership: { workspaceRole: "admin", profileRole: null, permissions: null },
    mcpWritebackEnabled: true
  }
}

const ProbeCredentials = Layer.succeed(CredentialStore)({
  bearer: (token) => Effect.succeed(Option.fromNullishOr(probeKeys[Redacted.value(token)])),
  appClient: () => Effect.succeed(Option.none()),
  membership: (userId, profileId) => Effect.succeed(Option.fromNullishOr(probeMemberships[`${userId}:${profileId}`])),
  session: () => Effect.succeed(Option.none()),
  forget: Effect.void
})

/** How many times the charge handler really ran (an idempotent replay must not run it). */
export const chargeCounter = { value: 0 }

const ProbeHandlers = HttpApiBuilder.group(ProbeApi, "probe", (handlers) =>
  handlers.handleAll({
    charge: ({ payload }) =>
      Effect.gen(function*() {
        if (payload.delay_ms !== undefined) yield* Effect.sleep(payload.delay_ms)
        if (payload.fail === true) return yield* new InvalidState({ message: "refused" })
        chargeCounter.value += 1
        return { data: { charge_number: chargeCounter.value, amount: payload.amount } }
      }),
    items: ({ payload }) => Effect.succeed({ data: { count: payload.items.length } }),
    query: ({ query }) => Effect.succeed({ limit: query.limit }),
    defect: () => Effect.die(new Error("boom: secret stack detail")),
    heavy: () => Effect.succeed({ ok: true }),
    anyScope: () => Effect.succeed({ ok: true }),
    gatedWrite: () => Effect.succeed({ ok: true }),
    personRead: () => Effect.succeed({ ok: true }),
    profileRead: () =>
      Effect.map(Principal, (principal) => ({
        profile_id: principal.kind === "api_key" ? principal.profileId : principal.kind === "user_token" ? principal.profile?.profileId ?? "" : "",
        scopes: principal.kind === "api_key" || principal.kind === "user_token" ? [...principal.scopes] : []
      })),
    goals: () => Effect.succeed({ ok: true })
  }))

export const ProbeApp = Layer.mergeAll(
  HttpApiBuilder.layer(ProbeApi).pipe(
    Layer.provide(ProbeHandlers),
    Layer.provide([AuthenticationLayer, SchemaErrorsLayer, DeprecationLayer, IdempotencyLayer]),
    Layer.provide(ProbeCredentials)
  ),
  EnvelopeLayer
)
