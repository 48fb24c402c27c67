/**
 * Resolves presented credentials against the database, behind a short-lived cache: a
 * revoked or expired key stops authenticating on every runner within the cache's lifetime
 * (five seconds), at once on the runner that revoked it through a revoke route (`forget`),
 * and at once anywhere it was not cached.
 */
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import { CredentialStore, type PrincipalShape, type ResolvedMembership } from "../../kernel/principal.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { CredentialPrefix, isWellFormed, secretDigest } from "../../kernel/credentials/tokens.ts"
import { scopesOfMcpGrants } from "../../../schema/scopes.ts"
import { digestsEqual } from "../../platform/secrets.ts"
import { CredentialsRepo } from "./repo.ts"

/** How long a resolved credential is trusted without asking the database again. */
export const AUTH_CACHE_TTL_MILLIS = 5_000
const MAX_CACHED = 10_000


/** Requests per minute of an OAuth app's client-credential calls, by tier. */
export const APP_TIER_LIMITS = { standard: 300, elevated: 1200, internal: 6000 } as const

type Membership = ResolvedMembership

interface Cached {
  readonly principal: Option.Option<PrincipalShape>
  readonly until: number
}

export const CredentialStoreLayer = Layer.effect(CredentialStore)(
  Effect.gen(function*() {
    const repo = yield* CredentialsRepo
    const cache = new Map<string, Cached>()

    /**
     * Resolves through the cache; only recognised credentials are cached, so a new key works at
     * once. A hit costs a digest and a map look-up: one clock read, no other effect; the look-up
     * effect is built only on a miss.
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
        return Effect.tap(lookup(), (principal) =>
          Effect.sync(() => {
            if (cache.size >= MAX_CACHED) cache.clear()
            if (Option.isSome(principal)) cache.set(cacheKey, { principal, until: now + AUTH_CACHE_TTL_MILLIS })
            else cache.delete(cacheKey)
          }))
      })

    const apiKey = (digest: string) =>
      repo.apiKey(digest)
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
      repo.userToken(digest)
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
      const lookup = () => repo.app(clientId)
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
      const lookup = () => repo.session(digest)
        .pipe(Effect.map(Option.map((row): PrincipalShape => ({ kind: "session", userId: row.user_id, sessionId: row.id }))))
      return cached(`session:${digest}`, lookup)
    }

    const memberships = new Map<string, { readonly found: Option.Option<Membership>; readonly until: number }>()
    const membership = (userId: string, profileId: string) => {
      const cacheKey = `${userId}:${profileId}`
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const hit = memberships.get(cacheKey)
        if (hit !== undefined && hit.until > now) return Effect.succeed(hit.found)
        return repo.membership(userId, profileId).pipe(
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
          )
        )
      })
    }

    const forget = Effect.sync(() => {
      cache.clear()
      memberships.clear()
    })

    return CredentialStore.of({ bearer, bearerFromHeader, bearerCached, appClient, membership, session, forget })
  })
).pipe(Layer.provide(CredentialsRepo.layer))
