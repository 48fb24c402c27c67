/**
 * Authentication, scope checks and the per-credential rate limit, driven by each
 * operation's `Policy`. Credentials are resolved by `CredentialStore` (API keys, user
 * tokens, app clients, sessions); the operator credential (`SVC_ADMIN_TOKEN`) is
 * configuration, checked here.
 */
import { Cause, Clock, Context, Duration, Effect, Exit, type Fiber, Layer, Option, Redacted } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { type ConsumeResult, RateLimiter } from "effect/persistence/RateLimiter"
import { isUuid } from "../../schema/common.ts"
import {
  DatabaseUnavailable,
  EntitlementRequired,
  InsufficientScope,
  InvalidRequest,
  NotFound,
  RateLimitExceeded,
  statusOfFailure,
  Unauthorized
} from "../../schema/errors.ts"
import { PiiAccessLog, piiResultOf } from "../kernel/audit/pii-access.ts"
import { scopesOfMembership } from "../../schema/members.ts"
import { CredentialStore, Principal, type PrincipalShape } from "../kernel/principal.ts"
import { checkScopes, type UserTokenHalves } from "../kernel/scope-check.ts"
import { parseBasicCredentials } from "../kernel/credentials/basic.ts"
import { CredentialPrefix } from "../kernel/credentials/tokens.ts"
import { AppConfig } from "../platform/config.ts"
export { checkScopes, type UserTokenHalves }
import { CurrentRequestAccess } from "../platform/request-id.ts"
import { DataDirLock } from "../platform/data-dir-lock.ts"
import { consumeBucket, fixedWindowConsumeOf, rateLimitExceeded } from "../platform/rate-limit.ts"
import { secretMatches } from "../platform/secrets.ts"
import { type CredentialKind, type OperationPolicy, Policy, PUBLIC } from "./policy.ts"
import { peerAddressOf } from "../platform/request-info.ts"

const isLoopback = (address: string) => address === "::1" || address.startsWith("127.")

const ANONYMOUS: PrincipalShape = { kind: "anonymous" }
const OPERATOR: Effect.Effect<Option.Option<PrincipalShape>> = Effect.succeed(Option.some({ kind: "operator" }))
const NO_PRINCIPAL: Effect.Effect<Option.Option<PrincipalShape>> = Effect.succeed(Option.none())

/** The per-minute allowance's window, as a Duration once rather than a string parsed per call. */
const METER_WINDOW = Duration.minutes(1)

/** A principal as it acts on this request: on profile-grain routes, narrowed to the profile. */
interface Resolved {
  readonly principal: PrincipalShape
  readonly attributionEnabled: boolean
  readonly halves?: UserTokenHalves
}

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
    // The usual form, `Bearer <token>` with one space, without the capturing match below (same answer).
    if (authorization.startsWith("Bearer ")) {
      const token = authorization.slice(7)
      if (token !== "" && !/\s/.test(token)) return { scheme: "bearer", value: token }
    }
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

/** An operator route on a service started without `SVC_ADMIN_TOKEN`: no credential can pass, so say why and how to change it. */
const operatorAccessOff = () =>
  new Unauthorized({
    message: "Operator access over HTTP is off: this service was started without SVC_ADMIN_TOKEN. To turn it on, set " +
      "SVC_ADMIN_TOKEN to a long random secret (for example `openssl rand -hex 32`), restart the service and send it as " +
      "`Authorization: Bearer <SVC_ADMIN_TOKEN>`.",
    reason: "operator_access_off"
  })

const describeKinds = (kinds: ReadonlyArray<CredentialKind>) => kinds.map((kind) => kind.replace("_", " ")).join(", ")

/** The `X-RateLimit-*` headers of a take, set on whatever answer the request ends with. */
const rateLimitHeaders = (result: ConsumeResult): HttpEffect.PreResponseHandler => {
  // Entries rather than a record: `setHeaders` then skips `Object.entries` (half the cost, per request).
  const headers: ReadonlyArray<readonly [string, string]> = [
    ["x-ratelimit-limit", String(result.limit)],
    ["x-ratelimit-remaining", String(Math.max(0, result.remaining))],
    ["x-ratelimit-reset", String(Math.ceil(Duration.toSeconds(result.resetAfter)))]
  ]
  return (_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers))
}

const exceededMessage = (limit: number) => ({ message: `Rate limit of ${limit} requests per minute exceeded.` })

/** The span attributes of an authenticated request (what `Effect.annotateCurrentSpan` would set). */
const principalAttributes = (principal: PrincipalShape): Record<string, string> =>
  principal.kind === "api_key"
    ? { "svc.principal.kind": principal.kind, "svc.profile_id": principal.profileId }
    : { "svc.principal.kind": principal.kind }

/** Fills the request's access record (its log line and request log): three writes, no effect (decision 0027). */
const noteAccess = (fiber: Fiber.Fiber<unknown, unknown>, principal: PrincipalShape) => {
  const access = fiber.getRef(CurrentRequestAccess)
  if (access === undefined) return
  access.principalKind = principal.kind
  access.keyId = principal.kind === "api_key" ? principal.keyId : null
  access.profileId = principal.kind === "api_key"
    ? principal.profileId
    : (principal.kind === "user_token" || principal.kind === "session") && principal.profile !== undefined
    ? principal.profile.profileId
    : null
}

/**
 * A refusal of a recognised credential on its profile (scope, entitlement): the access record
 * names the caller, so the request log shows the refused call to the profile it was made on.
 */
const refusedAfterNoting = <E>(principal: PrincipalShape, error: E): Effect.Effect<never, E> =>
  Effect.withFiber((fiber) => {
    noteAccess(fiber, principal)
    return Effect.fail(error)
  })

/** `Effect.annotateCurrentSpan(attributes)` run on `fiber` directly (the same checks). */
const annotateSpanOf = (fiber: Fiber.Fiber<unknown, unknown>, attributes: Record<string, string>) => {
  const span = fiber.cache.span
  if (span === undefined || span._tag !== "Span" || span.status._tag === "Ended") return
  for (const key in attributes) span.attribute(key, attributes[key])
}

interface Bucket {
  readonly key: string
  readonly limit: number
}

/**
 * A principal's bucket and span attributes, kept per principal object: the credential store hands
 * out the same object for as long as its cache entry lives, so the cached-key path builds neither
 * the key string nor the attributes per request.
 */
const meteringOfPrincipal = new WeakMap<PrincipalShape, { readonly bucket: Bucket | undefined; readonly attributes: Record<string, string> }>()
const meteringOf = (principal: PrincipalShape) => {
  let found = meteringOfPrincipal.get(principal)
  if (found === undefined) {
    found = { bucket: bucketOf(principal), attributes: principalAttributes(principal) }
    meteringOfPrincipal.set(principal, found)
  }
  return found
}

/** A request's fiber and the time its clock read when authentication began. */
interface OnFiber {
  readonly fiber: Fiber.Fiber<unknown, unknown>
  readonly now: number
}

/** Bucket key and per-minute allowance of a principal; `undefined` means not metered. */
const bucketOf = (principal: PrincipalShape): Bucket | undefined => {
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
      Unauthorized.wire,
      InsufficientScope.wire,
      InvalidRequest.wire,
      NotFound.wire,
      EntitlementRequired.wire,
      RateLimitExceeded.wire,
      DatabaseUnavailable.wire
    ]
  }
) {}

export const AuthenticationLayer = Layer.effect(Authentication)(
  Effect.gen(function*() {
    const settings = yield* AppConfig
    const store = yield* CredentialStore
    const limiter = yield* RateLimiter
    const piiLog = yield* PiiAccessLog

    // The request path below is built from plain functions and single combinators rather than
    // Effect.gen / Effect.fn: it runs on every authenticated request, a generator costs an
    // iterator per step and a traced Effect.fn captures a call-site stack on every call
    // (docs/decisions/0027-auth-path-cost.md).
    const bearerFromHeader = store.bearerFromHeader ?? ((token: string) => store.bearer(Redacted.make(token)))
    const bearerCached = store.bearerCached
    // Counters in this process (no REDIS_URL): a take is a plain function call. With Redis every
    // take goes to Redis through `consumeBucket`, the only exact count across runners.
    const consumeNow = fixedWindowConsumeOf(limiter)
    // The embedded database's per-start operator token (decision 0052): the CLI's way in while
    // this process holds the data directory; accepted from loopback peers only.
    const localOperatorToken = Option.flatMap(yield* Effect.serviceOption(DataDirLock), (lock) => lock.operatorToken)
    const resolveBearer = (
      token: string,
      request: HttpServerRequest.HttpServerRequest
    ): Effect.Effect<Option.Option<PrincipalShape>, DatabaseUnavailable> => {
      // Keys and tokens carry a prefix; only anything else is compared with the operator token.
      if (isMintedBearer(token)) return bearerFromHeader(token)
      if (Option.isSome(settings.adminToken) && secretMatches(token, settings.adminToken.value)) return OPERATOR
      if (
        Option.isSome(localOperatorToken) && secretMatches(token, localOperatorToken.value) &&
        Option.exists(peerAddressOf(request), isLoopback)
      ) return OPERATOR
      return NO_PRINCIPAL
    }

    const resolve = Effect.fnUntraced(function*(
      credential: PresentedCredential,
      request: HttpServerRequest.HttpServerRequest
    ): Effect.fn.Return<Option.Option<PrincipalShape>, DatabaseUnavailable> {
      if (credential.value === "") return Option.none()
      if (credential.scheme === "bearer") return yield* resolveBearer(credential.value, request)
      if (credential.scheme === "basic") {
        const credentials = parseBasicCredentials(credential.value)
        if (credentials === undefined) return Option.none()
        return yield* store.appClient(credentials.clientId, Redacted.make(credentials.secret))
      }
      return yield* store.session(Redacted.make(credential.value))
    })

    const meter = (
      principal: PrincipalShape,
      policy: OperationPolicy
    ): Effect.Effect<void, RateLimitExceeded, HttpServerRequest.HttpServerRequest> => {
      const { bucket } = meteringOf(principal)
      if (bucket === undefined) return Effect.void
      return Effect.flatMap(
        consumeBucket(limiter, {
          key: bucket.key,
          limit: bucket.limit,
          window: METER_WINDOW,
          tokens: policy.cost ?? 1,
          exceeded: exceededMessage(bucket.limit)
        }),
        (consumed) =>
          Option.isNone(consumed) ? Effect.void : HttpEffect.appendPreResponseHandler(rateLimitHeaders(consumed.value))
      )
    }

    /**
     * `annotateCurrentSpan` and `meter` for a limiter whose counters are in this process, run on
     * the request's fiber without an effect per step: the same attributes, the same take at the
     * fiber clock's time, the same 429 and the same headers handler. Undefined when it went through.
     */
    const annotateAndMeterOn = (
      fiber: Fiber.Fiber<unknown, unknown>,
      take: NonNullable<typeof consumeNow>,
      principal: PrincipalShape,
      policy: OperationPolicy,
      now: number
    ): RateLimitExceeded | undefined => {
      const { attributes, bucket } = meteringOf(principal)
      annotateSpanOf(fiber, attributes)
      if (bucket === undefined) return undefined
      const outcome = take({ key: bucket.key, limit: bucket.limit, window: METER_WINDOW, tokens: policy.cost ?? 1 }, now)
      if (outcome._tag === "Exceeded") return rateLimitExceeded(exceededMessage(bucket.limit), outcome.retryAfter)
      HttpEffect.appendPreResponseHandlerUnsafe(fiber.context, rateLimitHeaders(outcome.result))
      return undefined
    }

    /**
     * On profile-grain routes a person's credential names the profile with `?profile_id=`: the
     * membership must reach it (else the same 404 as a missing profile), and what the credential
     * may do there is what the membership allows (intersected with a token's MCP grant).
     */
    const onProfile = Effect.fnUntraced(function*(
      principal: PrincipalShape,
      policy: OperationPolicy,
      request: HttpServerRequest.HttpServerRequest
    ): Effect.fn.Return<Resolved, InvalidRequest | NotFound | InsufficientScope | DatabaseUnavailable> {
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
      if (principal.kind === "user_token" && !found.value.mcpWritebackEnabled && request.method !== "GET" && request.method !== "HEAD") {
        return yield* new InsufficientScope({
          message: "This workspace does not let MCP user tokens write (mcp_writeback_enabled is off in its MCP settings).",
          reason: "mcp_writeback_disabled"
        })
      }
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
      resolved: Resolved,
      /** The request's fiber and its clock's time, when the caller already runs on it (the cached-credential path). */
      at?: OnFiber
    ): Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      E | EntitlementRequired | InsufficientScope | RateLimitExceeded,
      Exclude<R, Principal> | HttpServerRequest.HttpServerRequest
    > => {
      if (policy.entitlement !== undefined && !resolved.attributionEnabled) {
        return refusedAfterNoting(
          resolved.principal,
          new EntitlementRequired({
            message: `The attribution add-on (${policy.entitlement}) is off for this profile; the provisioning app turns it on.`,
            reason: `entitlement_required:${policy.entitlement}`
          })
        )
      }
      const scopeError = checkScopes(resolved.principal, policy, resolved.halves)
      if (scopeError !== undefined) return refusedAfterNoting(resolved.principal, scopeError)
      const served = Effect.provideService(httpEffect, Principal, resolved.principal)
      if (consumeNow !== undefined) {
        const onFiber = (
          current: Fiber.Fiber<unknown, unknown>,
          now = current.getRef(Clock.Clock).currentTimeMillisUnsafe()
        ): Effect.Effect<HttpServerResponse.HttpServerResponse, E | RateLimitExceeded, Exclude<R, Principal>> => {
          noteAccess(current, resolved.principal)
          const exceeded = annotateAndMeterOn(current, consumeNow, principal, policy, now)
          return exceeded === undefined ? served : Effect.fail(exceeded)
        }
        return at === undefined ? Effect.withFiber((current) => onFiber(current)) : onFiber(at.fiber, at.now)
      }
      const annotate = Effect.withFiber((current) => {
        noteAccess(current, resolved.principal)
        return Effect.annotateCurrentSpan(meteringOf(principal).attributes)
      })
      return Effect.flatMap(annotate, () => Effect.flatMap(meter(principal, policy), () => served))
    }

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
      // Once per endpoint, when the API is built; the effect returned runs per request.
      const policy = Context.getOrElse(endpoint.annotations, Policy, () => PUBLIC)
      // Public operations skip the whole credential path.
      if (policy.auth.length === 0) return Effect.provideService(httpEffect, Principal, ANONYMOUS)
      // Decided here, once: the request path only picks the error.
      const operatorOff = policy.auth.length === 1 && policy.auth[0] === "operator" && Option.isNone(settings.adminToken)
      type Served = Effect.Effect<
        HttpServerResponse.HttpServerResponse,
        | Effect.Error<typeof httpEffect>
        | Unauthorized
        | InsufficientScope
        | InvalidRequest
        | NotFound
        | EntitlementRequired
        | RateLimitExceeded
        | DatabaseUnavailable,
        Exclude<Effect.Services<typeof httpEffect>, Principal> | HttpServerRequest.HttpServerRequest
      >
      const serve = (principal: PrincipalShape, resolved: Resolved, at?: OnFiber): Served => {
        const served = authorizeAndServe(httpEffect, policy, principal, resolved, at)
        return policy.personData === true ? logPersonDataAccess(served, resolved.principal, endpoint) : served
      }
      const authorize = (
        found: Option.Option<PrincipalShape>,
        request: HttpServerRequest.HttpServerRequest,
        at?: OnFiber
      ): Served => {
        if (Option.isNone(found)) return Effect.fail(operatorOff ? operatorAccessOff() : unauthorized())
        const principal = found.value
        if (!policy.auth.includes(principal.kind as CredentialKind)) {
          return Effect.fail(
            new InsufficientScope({
              message: `This operation accepts ${describeKinds(policy.auth)} credentials, not ${
                describeKinds([principal.kind as CredentialKind])
              }.`,
              reason: "credential_kind_not_accepted"
            })
          )
        }
        // An API key is bound to its profile: nothing to look up (see `onProfile`).
        if (principal.kind === "api_key") {
          return serve(principal, { principal, attributionEnabled: principal.attributionEnabled }, at)
        }
        return Effect.flatMap(onProfile(principal, policy, request), (resolved) => serve(principal, resolved))
      }
      return Effect.withFiber((fiber): Served => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const credential = presentedCredential(request)
        if (credential === undefined) return Effect.fail(operatorOff ? operatorAccessOff() : unauthorized("Authentication required."))
        if (credential.scheme === "bearer" && credential.value !== "") {
          // A key or token the store has cached: decided on this fiber, no effect until the handler.
          if (bearerCached !== undefined && isMintedBearer(credential.value)) {
            const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
            const hit = bearerCached(credential.value, now)
            if (hit !== undefined) return authorize(hit, request, { fiber, now })
          }
          return Effect.flatMap(resolveBearer(credential.value, request), (found) => authorize(found, request))
        }
        return Effect.flatMap(resolve(credential, request), (found) => authorize(found, request))
      })
    }
  })
)
