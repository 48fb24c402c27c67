/**
 * Who is calling, as the authentication middleware resolved it, and the store that resolves
 * presented credentials. Domains read the principal from here; src/http/auth.ts is the adapter
 * that fills it in per request.
 */
import { Context, Effect, type Option, type Redacted } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { ProfileMembership } from "../../schema/members.ts"

/** The profile a profile-grain request acts on, as the middleware resolved it. */
export interface ProfileContext {
  readonly profileId: string
  readonly workspaceId: string
  /**
   * The attribution add-on is on, or the profile was created by a person (only app-provisioned
   * profiles start on the connect-broker tier).
   */
  readonly attributionEnabled: boolean
}

/** A person's membership on a profile, as the credential store resolved it. */
export interface ResolvedMembership {
  readonly profile: ProfileContext
  readonly membership: ProfileMembership
  /** The workspace lets MCP user tokens write (its MCP settings' `mcp_writeback_enabled`). */
  readonly mcpWritebackEnabled: boolean
}

/** Who is calling. `anonymous` only reaches public operations. */
export type PrincipalShape =
  | { readonly kind: "anonymous" }
  | { readonly kind: "operator" }
  | {
    readonly kind: "api_key"
    readonly keyId: string
    readonly profileId: string
    readonly workspaceId: string
    readonly scopes: ReadonlyArray<string>
    readonly oauthAppId: string | null
    readonly rateLimitPerMinute: number
    /** The key's profile is on the attribution tier (see `ProfileContext`). */
    readonly attributionEnabled: boolean
  }
  | {
    readonly kind: "user_token"
    readonly tokenId: string
    readonly userId: string
    /** The MCP grant's scopes; on a profile-grain route, intersected with the person's membership there. */
    readonly scopes: ReadonlyArray<string>
    readonly rateLimitUnitsPerMinute: number
    /** Set on profile-grain routes: the `?profile_id=` profile, reached through a membership. */
    readonly profile?: ProfileContext
  }
  | {
    readonly kind: "app_client"
    readonly appId: string
    readonly clientId: string
    readonly rateLimitPerMinute: number
  }
  | {
    /** An internal service over `/rpc` (decision 0081), acting on the profile its call names. */
    readonly kind: "service"
    readonly credentialId: string
    readonly scopes: ReadonlyArray<string>
    readonly rateLimitPerMinute: number
    readonly profile: ProfileContext
  }
  | {
    readonly kind: "session"
    readonly userId: string
    readonly sessionId: string
    /** Set on profile-grain routes: the `?profile_id=` profile and what the membership allows there. */
    readonly profile?: ProfileContext
    readonly scopes?: ReadonlyArray<string>
  }

export class Principal extends Context.Service<Principal, PrincipalShape>()("svc/Principal") {}

export type AppPrincipal = Extract<PrincipalShape, { readonly kind: "app_client" }>

/** The app client on a route whose policy admits only app clients (the narrowing is for the type checker). */
export const appPrincipal: Effect.Effect<AppPrincipal, never, Principal> = Effect.flatMap(Principal, (principal) =>
  principal.kind === "app_client" ? Effect.succeed(principal) : Effect.die("partner route reached by a non-app principal"))

/** A credential the store recognised, or none. Store failures are `database_unavailable`. */
export interface CredentialStoreShape {
  /** `Authorization: Bearer <token>`: API keys and MCP user tokens (told apart by prefix). */
  readonly bearer: (token: Redacted.Redacted<string>) => Effect.Effect<Option.Option<PrincipalShape>, DatabaseUnavailable>
  /**
   * The same answer as `bearer` for the token as the middleware read it from the header: on the
   * request path it saves wrapping every presented token in a `Redacted` (a registry insertion
   * per request, measurable at high request rates; docs/decisions/0027-auth-path-cost.md).
   * Optional: without it the middleware calls `bearer`.
   */
  readonly bearerFromHeader?: (token: string) => Effect.Effect<Option.Option<PrincipalShape>, DatabaseUnavailable>
  /**
   * `bearerFromHeader`'s answer when the store has it cached and still fresh at `now` (the
   * fiber's clock), without an effect; undefined when the store would have to look it up.
   * Optional: without it the middleware calls `bearerFromHeader`.
   */
  readonly bearerCached?: (token: string, now: number) => Option.Option<PrincipalShape> | undefined
  /** `Authorization: Basic` with an OAuth app's client id and secret. */
  readonly appClient: (
    clientId: string,
    secret: Redacted.Redacted<string>
  ) => Effect.Effect<Option.Option<PrincipalShape>, DatabaseUnavailable>
  /**
   * The person's live membership on a live profile of a live workspace, with the profile's
   * tier; None when the person cannot reach it (the same answer as a missing profile).
   */
  readonly membership: (
    userId: string,
    profileId: string
  ) => Effect.Effect<Option.Option<ResolvedMembership>, DatabaseUnavailable>
  /** The console's session cookie. */
  readonly session: (cookie: Redacted.Redacted<string>) => Effect.Effect<Option.Option<PrincipalShape>, DatabaseUnavailable>
  /**
   * Drops what this runner has cached, after a revocation it committed: the revoked credential
   * stops here at once (other runners within their cache's lifetime).
   */
  readonly forget: Effect.Effect<void>
}

/** Resolves presented credentials; the database-backed implementation is ./credentials/service.ts. */
export class CredentialStore extends Context.Service<CredentialStore, CredentialStoreShape>()("svc/CredentialStore") {}

/** The scopes a principal holds; `undefined` for kinds that are not scope-bearing. */
export const scopesOf = (principal: PrincipalShape): ReadonlyArray<string> | undefined =>
  principal.kind === "api_key" || principal.kind === "user_token" || principal.kind === "session" ||
    principal.kind === "service"
    ? principal.scopes
    : undefined

/**
 * The scopes a principal acts with on this request, none for kinds that carry no scopes (a user
 * token's and a session's are already narrowed to the membership on profile-grain routes).
 */
export const heldScopes = (principal: PrincipalShape): ReadonlyArray<string> => scopesOf(principal) ?? []


/**
 * The credential a per-key budget is metered against (the spec's own buckets are per key: UTM
 * scans, creative analyses): one string per API key, user token, session, app or service.
 */
export const meteringKeyOf = (principal: PrincipalShape): string => {
  switch (principal.kind) {
    case "api_key":
      return `key:${principal.keyId}`
    case "user_token":
      return `token:${principal.tokenId}`
    case "session":
      return `session:${principal.sessionId}`
    case "app_client":
      return `app:${principal.appId}`
    case "service":
      return `service:${principal.credentialId}`
    case "operator":
    case "anonymous":
      return principal.kind
  }
}
