/**
 * Authentication, scope checks and the per-credential rate limit, driven by each
 * operation's `Policy`. Credentials are resolved by `CredentialStore` (API keys, user
 * tokens, app clients, sessions); the operator credential (`SVC_ADMIN_TOKEN`) is
 * configuration, checked here.
 */
import { Cause, Context, Duration, Effect, Exit, Layer, Option, Redacted } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { RateLimiter } from "effect/persistence/RateLimiter"
import { isUuid } from "../../schema/common.ts"
import {
  DatabaseUnavailable,
  EntitlementRequired,
  InsufficientScope,
  InvalidRequest,
  NotFound,
  RateLimitExceeded,
  statusOfFailure,
  Unauthorized,
  wire
} from "../../schema/errors.ts"
import { PiiAccessLog, piiResultOf } from "../audit/pii-access.ts"
import { type ProfileMembership, scopesOfMembership } from "../../schema/members.ts"
import { CredentialPrefix } from "../auth/tokens.ts"
import { AppConfig } from "../platform/config.ts"
import { consumeBucket } from "../platform/rate-limit.ts"
import { secretMatches } from "../platform/secrets.ts"
import { type CredentialKind, type OperationPolicy, Policy, PUBLIC } from "./policy.ts"

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
  ) => Effect.Effect<Option.Option<{ readonly profile: ProfileContext; readonly membership: ProfileMembership }>, DatabaseUnavailable>
  /** The console's session cookie. */
  readonly session: (cookie: Redacted.Redacted<string>) => Effect.Effect<Option.Option<PrincipalShape>, DatabaseUnavailable>
  /**
   * Drops what this runner has cached, after a revocation it committed: the revoked credential
   * stops here at once (other runners within their cache's lifetime).
   */
  readonly forget: Effect.Effect<void>
}

/** Resolves presented credentials; the database-backed implementation is src/auth/credential-store.ts. */
export class CredentialStore extends Context.Service<CredentialStore, CredentialStoreShape>()("svc/CredentialStore") {}

const ANONYMOUS: PrincipalShape = { kind: "anonymous" }

const SESSION_COOKIE = "svc_session"

const isMintedBearer = (token: string) =>
  token.startsWith(CredentialPrefix.apiKey) || token.startsWith(CredentialPrefix.userToken)

interface PresentedCredential {
  readonly scheme: "bearer" | "basic" | "session"
  readonly value: string
}

const presentedCredential = (request: HttpServerRequest.HttpServerRequest): PresentedCredential | undefined => {
  const authorization = request.headers["authorization"]
  if (authorization !== undefined) {
    const match = /^(Bearer|Basic)\s+(\S+)\s*$/i.exec(authorization)
    if (match?.[1] !== undefined && match[2] !== undefined) {
      return { scheme: match[1].toLowerCase() === "bearer" ? "bearer" : "basic", value: match[2] }
    }
    return { scheme: "bearer", value: "" }
  }
  const cookie = request.cookies[SESSION_COOKIE]
  return cookie === undefined ? undefined : { scheme: "session", value: cookie }
}

const noSuchProfile = () => new NotFound({ message: "No such profile." })

const unauthorized = (message = "Missing, invalid, expired or revoked credential.") => new Unauthorized({ message })

const describeKinds = (kinds: ReadonlyArray<CredentialKind>) => kinds.map((kind) => kind.replace("_", " ")).join(", ")

/** The scopes a principal holds; `undefined` for kinds that are not scope-bearing. */
const scopesOf = (principal: PrincipalShape): ReadonlyArray<string> | undefined =>
  principal.kind === "api_key" || principal.kind === "user_token" || principal.kind === "session" ? principal.scopes : undefined

/**
 * What a user token lacks, and why: its MCP grant, the person's membership on the profile, or
 * both (the two halves of its effective scopes).
 */
export interface UserTokenHalves {
  readonly grant: ReadonlyArray<string>
  readonly membership: ReadonlyArray<string>
  readonly workspaceRole: string
}

const describeMissing = (missing: ReadonlyArray<string>, halves: UserTokenHalves) => {
  const grantLacks = missing.filter((scope) => !halves.grant.includes(scope))
  const membershipLacks = missing.filter((scope) => !halves.membership.includes(scope))
  return [
    grantLacks.length > 0 ? `the token's MCP grant does not include ${grantLacks.join(", ")}` : "the token's MCP grant allows it",
    membershipLacks.length > 0
      ? `the person's membership (${halves.workspaceRole}) does not allow ${membershipLacks.join(", ")}`
      : "the person's membership allows it"
  ].join("; ")
}

export const checkScopes = (
  principal: PrincipalShape,
  policy: OperationPolicy,
  halves?: UserTokenHalves
): InsufficientScope | undefined => {
  const held = scopesOf(principal)
  if (held === undefined || policy.scopes.length === 0) return undefined
  const missing = policy.scopes.filter((scope) => !held.includes(scope))
  const satisfied = policy.scopeMode === "any" ? missing.length < policy.scopes.length : missing.length === 0
  if (satisfied) return undefined
  const needed = policy.scopeMode === "any" ? policy.scopes.join(" or ") : missing.join(", ")
  const message = principal.kind === "user_token"
    ? halves === undefined
      ? `This token lacks ${needed}: the token's grant and the person's membership must both allow it.`
      : `This token lacks ${needed}: ${describeMissing(missing, halves)}.`
    : principal.kind === "session"
    ? `Your membership on this profile does not allow ${needed}.`
    : `This credential lacks the scope ${needed}.`
  return new InsufficientScope({ message, reason: `missing_scope:${missing.join(",")}` })
}

/** Bucket key and per-minute allowance of a principal; `undefined` means not metered. */
const bucketOf = (principal: PrincipalShape): { readonly key: string; readonly limit: number } | undefined => {
  switch (principal.kind) {
    case "api_key":
      return { key: `key:${principal.keyId}`, limit: principal.rateLimitPerMinute }
    case "user_token":
      return { key: `user_token:${principal.tokenId}`, limit: principal.rateLimitUnitsPerMinute }
    case "app_client":
      return { key: `app:${principal.appId}`, limit: principal.rateLimitPerMinute }
    default:
      return undefined
  }
}

/** Authenticates, checks kind and scopes, meters the call, and provides `Principal`. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: Principal }>()(
  "svc/Authentication",
  {
    error: [
      wire(Unauthorized),
      wire(InsufficientScope),
      wire(InvalidRequest),
      wire(NotFound),
      wire(EntitlementRequired),
      wire(RateLimitExceeded),
      wire(DatabaseUnavailable)
    ]
  }
) {}

export const AuthenticationLayer = Layer.effect(Authentication)(
  Effect.gen(function*() {
    const settings = yield* AppConfig
    const store = yield* CredentialStore
    const limiter = yield* RateLimiter
    const piiLog = yield* PiiAccessLog

    // Untraced: these run on every request, and a traced Effect.fn captures a call-site stack each time.
    const resolve = Effect.fnUntraced(function*(
      credential: PresentedCredential
    ): Effect.fn.Return<Option.Option<PrincipalShape>, DatabaseUnavailable> {
      if (credential.value === "") return Option.none()
      if (credential.scheme === "bearer") {
        // Keys and tokens carry a prefix; only anything else is compared with the operator token.
        if (isMintedBearer(credential.value)) return yield* store.bearer(Redacted.make(credential.value))
        if (Option.isSome(settings.adminToken) && secretMatches(credential.value, settings.adminToken.value)) {
          return Option.some({ kind: "operator" })
        }
        return Option.none()
      }
      if (credential.scheme === "basic") {
        const decoded = Buffer.from(credential.value, "base64").toString("utf8")
        const colon = decoded.indexOf(":")
        if (colon <= 0) return Option.none()
        return yield* store.appClient(
          decodeURIComponent(decoded.slice(0, colon)),
          Redacted.make(decodeURIComponent(decoded.slice(colon + 1)))
        )
      }
      return yield* store.session(Redacted.make(credential.value))
    })

    const meter = Effect.fnUntraced(function*(principal: PrincipalShape, policy: OperationPolicy) {
      const bucket = bucketOf(principal)
      if (bucket === undefined) return
      const consumed = yield* consumeBucket(limiter, {
        key: bucket.key,
        limit: bucket.limit,
        window: "1 minute",
        tokens: policy.cost ?? 1,
        exceeded: { message: `Rate limit of ${bucket.limit} requests per minute exceeded.` }
      })
      if (Option.isNone(consumed)) return
      const result = consumed.value
      const headers = {
        "x-ratelimit-limit": String(result.limit),
        "x-ratelimit-remaining": String(Math.max(0, result.remaining)),
        "x-ratelimit-reset": String(Math.ceil(Duration.toSeconds(result.resetAfter)))
      }
      yield* HttpEffect.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeaders(response, headers))
      )
    })

    /**
     * On profile-grain routes a person's credential names the profile with `?profile_id=`: the
     * membership must reach it (else the same 404 as a missing profile), and what the credential
     * may do there is what the membership allows (intersected with a token's MCP grant).
     */
    const onProfile = Effect.fnUntraced(function*(
      principal: PrincipalShape,
      policy: OperationPolicy,
      request: HttpServerRequest.HttpServerRequest
    ): Effect.fn.Return<
      { readonly principal: PrincipalShape; readonly attributionEnabled: boolean; readonly halves?: UserTokenHalves },
      InvalidRequest | NotFound | DatabaseUnavailable
    > {
      if (principal.kind === "api_key") return { principal, attributionEnabled: principal.attributionEnabled }
      if (policy.grain !== "profile" || (principal.kind !== "user_token" && principal.kind !== "session")) {
        return { principal, attributionEnabled: true }
      }
      const profileId = new URL(request.url, "http://svc").searchParams.get("profile_id")
      if (profileId === null || profileId === "") {
        return yield* new InvalidRequest({
          message: principal.kind === "user_token"
            ? "A user token must name the profile: add ?profile_id=<uuid>."
            : "Name the profile: add ?profile_id=<uuid>."
        })
      }
      if (!isUuid(profileId)) return yield* noSuchProfile()
      const found = yield* store.membership(principal.userId, profileId.toLowerCase())
      if (Option.isNone(found)) return yield* noSuchProfile()
      const { membership, profile } = found.value
      const allowed: ReadonlyArray<string> = scopesOfMembership(membership)
      if (principal.kind === "session") {
        return { principal: { ...principal, profile, scopes: allowed }, attributionEnabled: profile.attributionEnabled }
      }
      return {
        principal: { ...principal, profile, scopes: principal.scopes.filter((scope) => allowed.includes(scope)) },
        attributionEnabled: profile.attributionEnabled,
        halves: { grant: principal.scopes, membership: allowed, workspaceRole: membership.workspaceRole }
      }
    })

    /** The entitlement gate, the scope check and the rate limit, then the handler with its principal. */
    const authorizeAndServe = <E, R>(
      httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
      policy: OperationPolicy,
      principal: PrincipalShape,
      resolved: { readonly principal: PrincipalShape; readonly attributionEnabled: boolean; readonly halves?: UserTokenHalves }
    ) =>
      Effect.gen(function*() {
        if (policy.entitlement !== undefined && !resolved.attributionEnabled) {
          return yield* new EntitlementRequired({
            message: `The attribution add-on (${policy.entitlement}) is off for this profile; the provisioning app turns it on.`,
            reason: `entitlement_required:${policy.entitlement}`
          })
        }
        const scopeError = checkScopes(resolved.principal, policy, resolved.halves)
        if (scopeError !== undefined) return yield* scopeError
        yield* Effect.annotateCurrentSpan({
          "svc.principal.kind": principal.kind,
          ...(principal.kind === "api_key" ? { "svc.profile_id": principal.profileId } : {})
        })
        yield* meter(principal, policy)
        return yield* Effect.provideService(httpEffect, Principal, resolved.principal)
      })

    /**
     * Person-data operations: every answer after authentication, allowed or refused, lands in the
     * workspace's PII access log with the route template (never the URL: it may carry an email).
     * A failed log write is reported, not turned into a failed read.
     */
    const logPersonDataAccess = <E, R>(
      served: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
      principal: PrincipalShape,
      endpoint: { readonly method: string; readonly path: string }
    ) => {
      const scope = principal.kind === "api_key"
        ? { workspaceId: principal.workspaceId, profileId: principal.profileId }
        : (principal.kind === "user_token" || principal.kind === "session") && principal.profile !== undefined
        ? { workspaceId: principal.profile.workspaceId, profileId: principal.profile.profileId }
        : undefined
      if (scope === undefined) return served
      return Effect.onExit(served, (exit) =>
        piiLog.record({
          principal,
          ...scope,
          route: `${endpoint.method} ${endpoint.path}`,
          result: piiResultOf(Exit.isSuccess(exit) ? exit.value.status : Option.match(Cause.findErrorOption(exit.cause), {
            onNone: () => 500,
            onSome: statusOfFailure
          }))
        }).pipe(Effect.catch((error) => Effect.logWarning("PII access not logged", error))))
    }

    return (httpEffect, { endpoint }) => {
      const policy = Context.getOrElse(endpoint.annotations, Policy, () => PUBLIC)
      // Public operations skip the whole credential path.
      if (policy.auth.length === 0) return Effect.provideService(httpEffect, Principal, ANONYMOUS)
      return Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const credential = presentedCredential(request)
        if (credential === undefined) return yield* unauthorized("Authentication required.")
        const principal = yield* resolve(credential).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(unauthorized()), onSome: Effect.succeed }))
        )
        if (!policy.auth.includes(principal.kind as CredentialKind)) {
          return yield* new InsufficientScope({
            message: `This operation accepts ${describeKinds(policy.auth)} credentials, not ${
              describeKinds([principal.kind as CredentialKind])
            }.`,
            reason: "credential_kind_not_accepted"
          })
        }
        const resolved = yield* onProfile(principal, policy, request)
        const served = authorizeAndServe(httpEffect, policy, principal, resolved)
        return yield* (policy.personData === true ? logPersonDataAccess(served, resolved.principal, endpoint) : served)
      })
    }
  })
)
