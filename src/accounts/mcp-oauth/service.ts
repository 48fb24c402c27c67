/**
 * The agent OAuth surface (decision 0023): authorization server metadata, dynamic client
 * registration of public clients, validation of PKCE authorization requests, the consent
 * screen's sign-in and single-use consent tickets, single-use authorization codes, and the
 * code exchange that mints an MCP user token through the same minter as
 * `POST /api/v1/me/mcp-tokens`.
 */
import { Context, Data, Effect, Layer, Option, Result } from "effect"
import { RateLimiter } from "effect/persistence/RateLimiter"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import {
  type AuthorizationServerMetadata,
  type ClientRegistered,
  McpRateLimited,
  McpRegistrationError,
  type McpTokenResponse
} from "../../../schema/mcp-oauth.ts"
import { OAuthInvalidClient, OAuthRequestError, OAuthServerError } from "../../../schema/oauth.ts"
import { type McpGrant, McpGrants } from "../../../schema/scopes.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { Sessions } from "../sessions/service.ts"
import { randomBase62, secretDigest } from "../../kernel/credentials/tokens.ts"
import { UserTokensRepo } from "../user-tokens/repo.ts"
import { DEFAULT_USER_TOKEN_UNITS_PER_MINUTE, userTokenMinter } from "../user-tokens/service.ts"
import { CredentialStore, type PrincipalShape } from "../../kernel/principal.ts"
import { AppConfig } from "../../platform/config.ts"
import { consumeBucket } from "../../platform/rate-limit.ts"
import { CODE_CHALLENGE_METHODS, malformedVerifier, requiredChallenge, verifierRefusal } from "../oauth/pkce.ts"
import { isMcpGrant, parseGrants, redirectUriRegistered, validateClientMetadata } from "./client-metadata.ts"
import { type ClientRow, McpOAuthRepo, type SessionRow, type TicketRow } from "./repo.ts"

/** Consent tickets and authorization codes live this long. */
export const TICKET_MINUTES = 10
export const CODE_MINUTES = 10
/** User tokens minted by the code exchange expire after this many days. */
export const MCP_TOKEN_DAYS = 90
const MAX_STATE = 1024

/** Registrations per client address per hour, and over all addresses per hour. */
export const REGISTRATIONS_PER_ADDRESS_PER_HOUR = 60
export const REGISTRATIONS_PER_HOUR = 1000

/** A request's parameters: a parameter without a value counts as absent (RFC 6749 section 3.1). */
export interface RequestParams {
  readonly values: ReadonlyMap<string, string>
  readonly repeated: ReadonlySet<string>
}

export const paramsOf = (entries: Iterable<readonly [string, string]>): RequestParams => {
  const values = new Map<string, string>()
  const seen = new Set<string>()
  const repeated = new Set<string>()
  for (const [name, value] of entries) {
    if (seen.has(name)) repeated.add(name)
    seen.add(name)
    if (value !== "") values.set(name, value)
  }
  return { values, repeated }
}

/** A validated authorization request. */
export interface AuthorizationRequest {
  readonly client: ClientRow
  readonly redirectUri: string
  readonly grants: ReadonlyArray<McpGrant>
  readonly state: string | null
  readonly codeChallenge: string
}

/**
 * What an authorization request comes to: an error page (unknown client or redirect_uri: never
 * redirect, RFC 6749 section 4.1.2.1), an error redirect to the client, or a valid request.
 */
export type AuthorizationCheck =
  | { readonly _tag: "ErrorPage"; readonly message: string }
  | { readonly _tag: "Redirect"; readonly location: string }
  | { readonly _tag: "Valid"; readonly request: AuthorizationRequest }

/**
 * The consent screen's sign-in was refused (wrong password, throttled): show the form again.
 * A throttled one says when to retry.
 */
export class SignInRefused extends Data.TaggedError("SignInRefused")<{
  readonly message: string
  readonly retryAfterSeconds?: number
}> {}

export interface SignedIn {
  readonly session: SessionRow
  /** The `svc_session` cookie value. */
  readonly secret: string
}

const serverError = () => new OAuthServerError({ error_description: "The request could not be completed. Retry it." })
const orServerError = (_: DatabaseUnavailable) => Effect.fail(serverError())

const invalidRequest = (description: string) => new OAuthRequestError({ error: "invalid_request", error_description: description })
const invalidGrant = (description: string) => new OAuthRequestError({ error: "invalid_grant", error_description: description })

/** The redirect URI with the response parameters added to its query (RFC 6749 section 4.1.2). */
export const redirectWith = (redirectUri: string, params: Record<string, string | null>): string => {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) {
    if (value !== null) url.searchParams.set(name, value)
  }
  return url.toString()
}

export class McpOAuthService extends Context.Service<McpOAuthService, {
  readonly metadata: () => AuthorizationServerMetadata
  readonly register: (
    body: unknown,
    address: string
  ) => Effect.Effect<ClientRegistered, McpRegistrationError | McpRateLimited | OAuthServerError>
  readonly checkAuthorization: (params: RequestParams) => Effect.Effect<AuthorizationCheck, OAuthServerError>
  /** The live session named by a `svc_session` cookie. */
  readonly sessionOf: (cookie: string | undefined) => Effect.Effect<Option.Option<SessionRow>, OAuthServerError>
  /** A new consent ticket for this session and request; the plaintext goes into the page only. */
  readonly issueTicket: (session: SessionRow, request: AuthorizationRequest) => Effect.Effect<string, OAuthServerError>
  /** Password sign-in through the Sessions service (and its failure throttling). */
  readonly signIn: (email: string, password: string) => Effect.Effect<SignedIn, SignInRefused | OAuthServerError>
  /**
   * Answers the consent screen: the redirect (code or access_denied) when the ticket is live,
   * unused and issued to this session; None otherwise (nothing is redirected anywhere).
   */
  readonly decide: (
    ticket: string,
    session: SessionRow,
    approve: boolean
  ) => Effect.Effect<Option.Option<string>, OAuthServerError>
  readonly exchange: (
    params: RequestParams
  ) => Effect.Effect<McpTokenResponse, OAuthRequestError | OAuthInvalidClient | OAuthServerError>
}>()("svc/McpOAuthService") {
  static readonly layer = Layer.effect(McpOAuthService)(
    Effect.gen(function*() {
      const settings = yield* AppConfig
      const repo = yield* McpOAuthRepo
      const tokens = yield* UserTokensRepo
      const sessions = yield* Sessions
      const audit = yield* AuditLog
      const credentials = yield* CredentialStore
      const limiter = yield* RateLimiter
      const mintUserToken = yield* userTokenMinter

      const metadata = (): AuthorizationServerMetadata => ({
        issuer: settings.baseUrl,
        authorization_endpoint: `${settings.baseUrl}/oauth/mcp/authorize`,
        token_endpoint: `${settings.baseUrl}/oauth/mcp/token`,
        registration_endpoint: `${settings.baseUrl}/oauth/mcp/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code"],
        code_challenge_methods_supported: [...CODE_CHALLENGE_METHODS],
        token_endpoint_auth_methods_supported: ["none"],
        scopes_supported: [...McpGrants]
      })

      const throttle = (key: string, limit: number, what: string) =>
        consumeBucket(limiter, { key, limit, window: "1 hour", exceeded: { message: what } })

      const registrationAllowed = (address: string) =>
        Effect.gen(function*() {
          yield* throttle(
            `mcp_register:address:${address}`,
            REGISTRATIONS_PER_ADDRESS_PER_HOUR,
            "Too many client registrations from this address."
          )
          yield* throttle(`mcp_register:all`, REGISTRATIONS_PER_HOUR, "Too many client registrations.")
        }).pipe(
          Effect.catchTag("RateLimitExceeded", (exceeded) =>
            Effect.fail(
              new McpRateLimited({
                error_description: `${exceeded.message} Retry after ${exceeded.retry_after_seconds ?? 1} seconds.`,
                retry_after_seconds: exceeded.retry_after_seconds ?? 1
              })
            ))
        )

      const register = Effect.fn("McpOAuthService.register")(function*(body: unknown, address: string) {
        const metadata = yield* validateClientMetadata(body)
        // Only registrations that would be stored count against the limits.
        yield* registrationAllowed(address)
        const row = yield* repo.insertClient({
          clientId: `svc_mcp_${randomBase62(24)}`,
          clientName: metadata.clientName,
          redirectUris: metadata.redirectUris,
          grants: metadata.grants
        }).pipe(Effect.catchTag("DatabaseUnavailable", orServerError))
        return {
          client_id: row.client_id,
          client_id_issued_at: row.issued_at,
          ...(row.client_name === null ? {} : { client_name: row.client_name }),
          redirect_uris: row.redirect_uris,
          token_endpoint_auth_method: "none",
          grant_types: ["authorization_code"],
          response_types: ["code"],
          scope: row.grants.join(" ")
        } satisfies ClientRegistered
      })

      const checkAuthorization = Effect.fn("McpOAuthService.checkAuthorization")(function*(
        params: RequestParams
      ): Effect.fn.Return<AuthorizationCheck, OAuthServerError> {
        const page = (message: string): AuthorizationCheck => ({ _tag: "ErrorPage", message })
        const clientId = params.values.get("client_id")
        if (clientId === undefined || params.repeated.has("client_id")) {
          return page("The request does not name exactly one client (client_id).")
        }
        const client = yield* repo.findClient(clientId).pipe(Effect.catchTag("DatabaseUnavailable", orServerError))
        if (Option.isNone(client)) return page("The application that sent you here is not registered with this service.")
        const redirectUri = params.values.get("redirect_uri")
        if (redirectUri === undefined || params.repeated.has("redirect_uri")) {
          return page("The request does not name exactly one redirect URI (redirect_uri).")
        }
        if (!redirectUriRegistered(client.value.redirect_uris, redirectUri)) {
          return page("The redirect URI of this request is not registered for the application.")
        }
        // From here on errors go back to the client (RFC 6749 section 4.1.2.1).
        const rawState = params.repeated.has("state") ? undefined : params.values.get("state")
        const state = rawState !== undefined && rawState.length <= MAX_STATE ? rawState : null
        const redirect = (error: string, description: string): AuthorizationCheck => ({
          _tag: "Redirect",
          location: redirectWith(redirectUri, { error, error_description: description, state })
        })
        const repeated = ["response_type", "state", "scope", "code_challenge", "code_challenge_method"]
          .find((name) => params.repeated.has(name))
        if (repeated !== undefined) return redirect("invalid_request", `Parameter ${repeated} is repeated.`)
        if (rawState !== undefined && rawState.length > MAX_STATE) {
          return redirect("invalid_request", `state may have at most ${MAX_STATE} characters.`)
        }
        const responseType = params.values.get("response_type")
        if (responseType === undefined) return redirect("invalid_request", "response_type is required.")
        if (responseType !== "code") {
          return redirect("unsupported_response_type", "Only response_type=code is served.")
        }
        // Every client here is public (token_endpoint_auth_method none): PKCE is required (decision 0106).
        const pkce = requiredChallenge(params.values.get("code_challenge"), params.values.get("code_challenge_method"))
        if (Result.isFailure(pkce)) return redirect("invalid_request", pkce.failure)
        const challenge = pkce.success
        const scope = params.values.get("scope")
        const grants = scope === undefined ? ["mcp:read" as const] : parseGrants(scope)
        if (grants === undefined) {
          return redirect("invalid_scope", `scope must be space-separated MCP grants: ${McpGrants.join(", ")}.`)
        }
        const outside = grants.filter((grant) => !client.value.grants.includes(grant))
        if (outside.length > 0) {
          return redirect("invalid_scope", `Not registered for this client: ${outside.join(" ")}.`)
        }
        return { _tag: "Valid", request: { client: client.value, redirectUri, grants, state, codeChallenge: challenge } }
      })

      const sessionOf = Effect.fn("McpOAuthService.sessionOf")(function*(cookie: string | undefined) {
        if (cookie === undefined || cookie === "") return Option.none<SessionRow>()
        return yield* repo.findSession(secretDigest(cookie)).pipe(Effect.catchTag("DatabaseUnavailable", orServerError))
      })

      const issueTicket = Effect.fn("McpOAuthService.issueTicket")(function*(session: SessionRow, request: AuthorizationRequest) {
        const ticket = randomBase62(43)
        yield* repo.insertTicket({
          digest: secretDigest(ticket),
          sessionId: session.id,
          userId: session.user_id,
          clientId: request.client.client_id,
          redirectUri: request.redirectUri,
          grants: request.grants,
          state: request.state,
          codeChallenge: request.codeChallenge,
          minutes: TICKET_MINUTES
        }).pipe(Effect.catchTag("DatabaseUnavailable", orServerError))
        return ticket
      })

      const signIn = Effect.fn("McpOAuthService.signIn")(function*(email: string, password: string) {
        if (email.length > 320 || password.length > 1024) {
          return yield* new SignInRefused({ message: "Unknown email or wrong password." })
        }
        // Sessions.login keeps its own failure throttling (per email and address, and per address).
        const created = yield* sessions.login(email, password).pipe(
          Effect.catchTags({
            Unauthorized: (refused) => Effect.fail(new SignInRefused({ message: refused.message })),
            RateLimitExceeded: (throttled) =>
              Effect.fail(
                throttled.retry_after_seconds === undefined
                  ? new SignInRefused({ message: throttled.message })
                  : new SignInRefused({
                    message: `${throttled.message} Try again in ${throttled.retry_after_seconds} seconds.`,
                    retryAfterSeconds: throttled.retry_after_seconds
                  })
              ),
            DatabaseUnavailable: orServerError
          })
        )
        const session = yield* repo.findSession(secretDigest(created.secret)).pipe(
          Effect.catchTag("DatabaseUnavailable", orServerError)
        )
        if (Option.isNone(session)) return yield* Effect.die(new Error("a session just created is not live"))
        return { session: session.value, secret: created.secret } satisfies SignedIn
      })

      const decide = Effect.fn("McpOAuthService.decide")(function*(ticket: string, session: SessionRow, approve: boolean) {
        const actor: PrincipalShape = { kind: "session", userId: session.user_id, sessionId: session.id }
        return yield* repo.transaction(Effect.gen(function*() {
          const consumed = yield* repo.consumeTicket(secretDigest(ticket), session.id)
          if (Option.isNone(consumed)) return Option.none<string>()
          const request: TicketRow = consumed.value
          yield* audit.record({
            actor,
            action: approve ? "mcp_client.authorized" : "mcp_client.denied",
            targetKind: "mcp_client",
            targetId: request.client_id,
            details: { grants: request.grants, redirect_uri: request.redirect_uri }
          })
          if (!approve) {
            return Option.some(redirectWith(request.redirect_uri, {
              error: "access_denied",
              error_description: "The person declined the request.",
              state: request.state
            }))
          }
          const code = randomBase62(43)
          yield* repo.insertCode({ digest: secretDigest(code), ticket: request, minutes: CODE_MINUTES })
          return Option.some(redirectWith(request.redirect_uri, { code, state: request.state }))
        })).pipe(Effect.catchTag("DatabaseUnavailable", orServerError))
      })

      type Redeemed =
        | { readonly _tag: "Issued"; readonly token: string; readonly grants: ReadonlyArray<McpGrant> }
        | { readonly _tag: "Refused"; readonly description: string }
        | { readonly _tag: "Reused"; readonly revoked: boolean }

      const redeem = (digest: string, clientId: string, redirectUri: string, verifier: string | undefined) =>
        repo.transaction(Effect.gen(function*(): Effect.fn.Return<Redeemed, DatabaseUnavailable> {
          const found = yield* repo.lockCode(digest)
          if (Option.isNone(found)) return { _tag: "Refused", description: "The authorization code is not valid." }
          const code = found.value
          const actor: PrincipalShape = { kind: "session", userId: code.user_id, sessionId: code.session_id }
          if (code.used) {
            // RFC 6749 section 4.1.2: a code used twice revokes what it issued.
            const revoked = code.token_id === null ? Option.none() : yield* tokens.revoke(code.token_id)
            if (Option.isSome(revoked)) {
              yield* audit.record({
                actor,
                action: "user_token.revoked",
                targetKind: "user_token",
                targetId: revoked.value.id,
                details: { via: "mcp_oauth", reason: "authorization_code_reused", mcp_client_id: code.client_id }
              })
            }
            return { _tag: "Reused", revoked: Option.isSome(revoked) }
          }
          if (!code.live) return { _tag: "Refused", description: "The authorization code has expired." }
          if (code.client_id !== clientId) {
            return { _tag: "Refused", description: "The authorization code was issued to another client." }
          }
          if (code.redirect_uri !== redirectUri) {
            return { _tag: "Refused", description: "redirect_uri differs from the one of the authorization request." }
          }
          const pkceRefused = verifierRefusal(code.code_challenge, verifier)
          if (pkceRefused !== undefined) {
            // A code presented with a wrong or missing verifier may have leaked: it is spent, as in the partner flow (decision 0106).
            yield* repo.markCodeUsed(digest, null)
            return { _tag: "Refused", description: pkceRefused }
          }
          const grants = code.grants.filter(isMcpGrant)
          const token = yield* mintUserToken({
            actor,
            userId: code.user_id,
            grants,
            rateLimitUnitsPerMinute: DEFAULT_USER_TOKEN_UNITS_PER_MINUTE,
            expiresInDays: MCP_TOKEN_DAYS,
            mcpClientId: code.client_id,
            details: { via: "mcp_oauth" }
          })
          yield* repo.markCodeUsed(digest, token.id)
          return { _tag: "Issued", token: token.token, grants: token.grants }
        }))

      const exchange = Effect.fn("McpOAuthService.exchange")(function*(params: RequestParams) {
        const names = ["grant_type", "client_id", "code", "redirect_uri", "code_verifier"]
        const repeated = names.find((name) => params.repeated.has(name))
        if (repeated !== undefined) return yield* invalidRequest(`Parameter ${repeated} is repeated.`)
        const grantType = params.values.get("grant_type")
        if (grantType === undefined) return yield* invalidRequest("grant_type is required.")
        if (grantType !== "authorization_code") {
          return yield* new OAuthRequestError({
            error: "unsupported_grant_type",
            error_description: "This endpoint serves grant_type=authorization_code."
          })
        }
        // A missing code_verifier is the grant's refusal below (invalid_grant, the code spent), as in the partner flow.
        const missing = names.find((name) => name !== "code_verifier" && !params.values.has(name))
        if (missing !== undefined) return yield* invalidRequest(`${missing} is required.`)
        const clientId = params.values.get("client_id") ?? ""
        const code = params.values.get("code") ?? ""
        const redirectUri = params.values.get("redirect_uri") ?? ""
        const verifier = params.values.get("code_verifier")
        const malformed = malformedVerifier(verifier)
        if (malformed !== undefined) return yield* invalidRequest(malformed)
        const client = yield* repo.findClient(clientId).pipe(Effect.catchTag("DatabaseUnavailable", orServerError))
        if (Option.isNone(client)) return yield* new OAuthInvalidClient({ error_description: "Unknown client_id." })
        const redeemed = yield* redeem(secretDigest(code), clientId, redirectUri, verifier).pipe(
          Effect.catchTag("DatabaseUnavailable", orServerError)
        )
        switch (redeemed._tag) {
          case "Refused":
            return yield* invalidGrant(redeemed.description)
          case "Reused":
            // The revoked token must stop at once on this runner, not after the credential cache expires.
            if (redeemed.revoked) yield* credentials.forget
            // A code refused for its verifier was spent without issuing a token: nothing to revoke.
            return yield* invalidGrant(
              redeemed.revoked
                ? "The authorization code was already used; the token issued for it is revoked."
                : "The authorization code was already used."
            )
          case "Issued":
            return {
              access_token: redeemed.token,
              token_type: "Bearer",
              scope: redeemed.grants.join(" "),
              expires_in: MCP_TOKEN_DAYS * 86_400
            } satisfies McpTokenResponse
        }
      })

      return { metadata, register, checkAuthorization, sessionOf, issueTicket, signIn, decide, exchange }
    })
  ).pipe(Layer.provide([McpOAuthRepo.layer, UserTokensRepo.layer, AuditLog.layer, Sessions.layer]))
}
