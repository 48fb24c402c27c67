/**
 * Resolves presented credentials against the database, behind a short-lived cache: a
 * revoked or expired key stops authenticating on every runner within the cache's lifetime
 * (five seconds), at once on the runner that revoked it through a revoke route (`forget`),
 * and at once anywhere it was not cached.
 */
import { Clock, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialStore, type PrincipalShape, type ResolvedMembership } from "../principal.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { decodeFirstRow, orDatabaseUnavailable } from "../../platform/database.ts"
import { CredentialPrefix, isWellFormed, secretDigest } from "./tokens.ts"
import { scopesOfMcpGrants } from "../../../schema/scopes.ts"
import { ProfileRole, WorkspaceRole } from "../../../schema/members.ts"
import { digestsEqual } from "../../platform/secrets.ts"

/** How long a resolved credential is trusted without asking the database again. */
export const AUTH_CACHE_TTL_MILLIS = 5_000
const MAX_CACHED = 10_000


/** Requests per minute of an OAuth app's client-credential calls, by tier. */
export const APP_TIER_LIMITS = { standard: 300, elevated: 1200, internal: 6000 } as const

const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  workspace_id: Schema.String,
  scopes: Schema.Array(Schema.String),
  oauth_app_id: Schema.NullOr(Schema.String),
  rate_limit_per_minute: Schema.Int,
  attribution_enabled: Schema.Boolean
})

const UserTokenRow = Schema.Struct({
  id: Schema.String,
  user_id: Schema.String,
  grants: Schema.Array(Schema.String),
  rate_limit_units_per_minute: Schema.Int
})

const AppRow = Schema.Struct({
  id: Schema.String,
  client_id: Schema.String,
  client_secret_hash: Schema.String,
  rate_tier: Schema.Literals(["standard", "elevated", "internal"])
})

const SessionRow = Schema.Struct({ id: Schema.String, user_id: Schema.String })

const MembershipRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  attribution_enabled: Schema.Boolean,
  workspace_role: WorkspaceRole,
  profile_role: Schema.NullOr(ProfileRole),
  permissions: Schema.NullOr(Schema.Array(Schema.String)),
  mcp_writeback_enabled: Schema.Boolean
})

/**
 * Only app-provisioned profiles start on the connect-broker tier; a profile a person created
 * has every feature. (SQL over `p` = profiles.)
 */
const ATTRIBUTION_ENABLED = `(p.provisioned_by_app_id IS NULL OR COALESCE((
  SELECT e.enabled FROM entitlements e WHERE e.profile_id = p.id AND e.feature = 'svc_attribution'), false))`

type Membership = ResolvedMembership

interface Cached {
  readonly principal: Option.Option<PrincipalShape>
  readonly until: number
}

export const CredentialStoreLive = Layer.effect(CredentialStore)(
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const cache = new Map<string, Cached>()

    const firstKey = decodeFirstRow(ApiKeyRow)
    const firstToken = decodeFirstRow(UserTokenRow)
    const firstApp = decodeFirstRow(AppRow)
    const firstSession = decodeFirstRow(SessionRow)
    const firstMembership = decodeFirstRow(MembershipRow)

    /**
     * Resolves through the cache; only recognised credentials are cached, so a new key works at
     * once. A hit costs a digest and a map look-up: one clock read, no other effect; the look-up
     * effect (and the database-error mapping) is built only on a miss.
     */
    const cached = <E>(
      cacheKey: string,
      lookup: () => Effect.Effect<Option.Option<PrincipalShape>, E>,
      /** Checked on a miss only: false answers None without touching the cache or the database. */
      wellFormed: () => boolean = () => true
    ) =>
      Effect.clockWith((clock) => {
        const now = clock.currentTimeMillisUnsafe()
        const hit = cache.get(cacheKey)
        if (hit !== undefined && hit.until > now) return Effect.succeed(hit.principal)
        if (!wellFormed()) return Effect.succeed(Option.none<PrincipalShape>())
        return orDatabaseUnavailable(Effect.tap(lookup(), (principal) =>
          Effect.sync(() => {
            if (cache.size >= MAX_CACHED) cache.clear()
            if (Option.isSome(principal)) cache.set(cacheKey, { principal, until: now + AUTH_CACHE_TTL_MILLIS })
            else cache.delete(cacheKey)
          })))
      })

    const apiKey = (digest: string) =>
      firstKey(sql`
        SELECT k.id, k.profile_id, k.workspace_id, k.scopes, k.oauth_app_id, k.rate_limit_per_minute,
               ${sql.literal(ATTRIBUTION_ENABLED)} AS attribution_enabled
        FROM api_keys k
        JOIN profiles p ON p.id = k.profile_id AND p.archived_at IS NULL
        WHERE k.secret_hash = ${digest} AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`)
        .pipe(Effect.map(Option.map((row): PrincipalShape => ({
          kind: "api_key",
          keyId: row.id,
          profileId: row.profile_id,
          workspaceId: row.workspace_id,
          scopes: row.scopes,
          oauthAppId: row.oauth_app_id,
          rateLimitPerMinute: row.rate_limit_per_minute,
          attributionEnabled: row.attribution_enabled
        }))))

    const userToken = (digest: string) =>
      firstToken(sql`
        SELECT id, user_id, grants, rate_limit_units_per_minute FROM user_tokens
        WHERE secret_hash = ${digest} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`)
        .pipe(Effect.map(Option.map((row): PrincipalShape => ({
          kind: "user_token",
          tokenId: row.id,
          userId: row.user_id,
          scopes: scopesOfMcpGrants(row.grants),
          rateLimitUnitsPerMinute: row.rate_limit_units_per_minute
        }))))

    /**
     * Only a well-formed key or token is cached, under its digest, so a hit means this exact
     * string passed the checksum before: the digest comes first and the checksum is only
     * computed on a miss. Keys and tokens are cached under the bare digest (their plaintexts
     * differ in prefix, so their digests cannot meet); app and session entries carry a tag.
     */
    const bearerFromHeader = (value: string): Effect.Effect<Option.Option<PrincipalShape>, DatabaseUnavailable> => {
      const prefix = value.startsWith(CredentialPrefix.apiKey)
        ? CredentialPrefix.apiKey
        : value.startsWith(CredentialPrefix.userToken)
        ? CredentialPrefix.userToken
        : undefined
      if (prefix === undefined) return Effect.succeed(Option.none())
      const digest = secretDigest(value)
      const wellFormed = () => isWellFormed(value, prefix)
      return cached(digest, () => prefix === CredentialPrefix.apiKey ? apiKey(digest) : userToken(digest), wellFormed)
    }

    const bearer = (token: Redacted.Redacted<string>) => bearerFromHeader(Redacted.value(token))

    /** `bearerFromHeader`'s answer at `now` when it is a fresh cache hit; undefined otherwise. */
    const bearerCached = (value: string, now: number): Option.Option<PrincipalShape> | undefined => {
      if (!value.startsWith(CredentialPrefix.apiKey) && !value.startsWith(CredentialPrefix.userToken)) return undefined
      const hit = cache.get(secretDigest(value))
      return hit !== undefined && hit.until > now ? hit.principal : undefined
    }

    const appClient = (clientId: string, secret: Redacted.Redacted<string>) => {
      const value = Redacted.value(secret)
      if (!isWellFormed(value, CredentialPrefix.clientSecret)) return Effect.succeed(Option.none())
      const digest = secretDigest(value)
      const lookup = () => firstApp(sql`
        SELECT id, client_id, client_secret_hash, rate_tier FROM oauth_apps
        WHERE client_id = ${clientId} AND deleted_at IS NULL`)
        .pipe(Effect.map(Option.flatMap((row) =>
          digestsEqual(row.client_secret_hash, digest)
            ? Option.some<PrincipalShape>({
              kind: "app_client",
              appId: row.id,
              clientId: row.client_id,
              rateLimitPerMinute: APP_TIER_LIMITS[row.rate_tier]
            })
            : Option.none()
        )))
      return cached(`app:${clientId}:${digest}`, lookup)
    }

    const session = (cookie: Redacted.Redacted<string>) => {
      const value = Redacted.value(cookie)
      if (!isWellFormed(value, CredentialPrefix.session)) return Effect.succeed(Option.none())
      const digest = secretDigest(value)
      const lookup = () => firstSession(sql`
        SELECT id, user_id FROM sessions WHERE secret_hash = ${digest} AND revoked_at IS NULL AND expires_at > now()`)
        .pipe(Effect.map(Option.map((row): PrincipalShape => ({ kind: "session", userId: row.user_id, sessionId: row.id }))))
      return cached(`session:${digest}`, lookup)
    }

    const memberships = new Map<string, { readonly found: Option.Option<Membership>; readonly until: number }>()
    const membership = (userId: string, profileId: string) => {
      const cacheKey = `${userId}:${profileId}`
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const hit = memberships.get(cacheKey)
        if (hit !== undefined && hit.until > now) return Effect.succeed(hit.found)
        return firstMembership(sql`
          SELECT p.id AS profile_id, p.workspace_id, ${sql.literal(ATTRIBUTION_ENABLED)} AS attribution_enabled,
                 m.role AS workspace_role, pm.role AS profile_role, pm.permissions,
                 COALESCE((SELECT s.mcp_writeback_enabled FROM workspace_mcp_settings s WHERE s.workspace_id = p.workspace_id),
                          false) AS mcp_writeback_enabled
          FROM profiles p
          JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
          JOIN workspace_memberships m ON m.workspace_id = p.workspace_id AND m.user_id = ${userId} AND m.removed_at IS NULL
          LEFT JOIN profile_memberships pm ON pm.profile_id = p.id AND pm.user_id = ${userId} AND pm.removed_at IS NULL
          WHERE p.id = ${profileId} AND p.archived_at IS NULL
            AND (m.role IN ('owner', 'admin', 'analyst') OR pm.user_id IS NOT NULL)`).pipe(
          Effect.map(Option.map((row): Membership => ({
            profile: { profileId: row.profile_id, workspaceId: row.workspace_id, attributionEnabled: row.attribution_enabled },
            membership: { workspaceRole: row.workspace_role, profileRole: row.profile_role, permissions: row.permissions },
            mcpWritebackEnabled: row.mcp_writeback_enabled
          }))),
          Effect.tap((found) =>
            Effect.sync(() => {
              if (memberships.size >= MAX_CACHED) memberships.clear()
              memberships.set(cacheKey, { found, until: now + AUTH_CACHE_TTL_MILLIS })
            })
          ),
          orDatabaseUnavailable
        )
      })
    }

    const forget = Effect.sync(() => {
      cache.clear()
      memberships.clear()
    })

    return CredentialStore.of({ bearer, bearerFromHeader, bearerCached, appClient, membership, session, forget })
  })
)
