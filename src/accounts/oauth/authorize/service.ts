/**
 * Partner consent, `GET /oauth/authorize` and `POST /oauth/authorize/consent` (decision 0022).
 *
 * The request names an app, one of its registered redirect URIs, connect scopes and a signed
 * `id_token_hint`. An unknown client or an unregistered redirect URI is answered with a page,
 * never redirected (RFC 6749 section 4.1.2.1); every other failure redirects back with
 * `error`, `error_description` and `state`. `external_ref` apps resolve the profile from the
 * hint and get a code at once; `email` apps get a consent screen whose approval (a single-use
 * ticket plus a SameSite cookie) grants, or creates a workspace and profile for the email.
 */
import { Clock, Context, Effect, Layer, Option, Result } from "effect"
import { AuthorizePageError, AuthorizeRedirectError } from "../../../../schema/oauth.ts"
import {
  type ConnectScope,
  ConnectScopes,
  isHealthcareFamily,
  mintableScopes,
  type Scope
} from "../../../../schema/scopes.ts"
import { AuditLog } from "../../../kernel/audit/repo.ts"
import { APP_TIER_LIMITS } from "../../credentials/service.ts"
import { randomBase62, secretDigest } from "../../../kernel/credentials/tokens.ts"
import { AdminRepo } from "../../admin/repo.ts"
import { TrackingKeys } from "../../profiles/lifecycle.ts"
import { ProvisionedProfiles } from "../../profiles/provisioned.ts"
import { TenancyRepo } from "../../profiles/repo.ts"
import { SecretBox } from "../../../platform/secret-box.ts"
import { digestsEqual } from "../../../platform/secrets.ts"
import { type AuthorizingAppRow, AuthorizeRepo, isSecretShaped, SECRET_LENGTH, type TicketRow } from "./repo.ts"
import { verifyHint, type VerifiedHint } from "./hint.ts"
import type { ConsentScreen } from "./pages.ts"
import { OAuthRepo } from "../token/repo.ts"
import { optionalChallenge } from "../pkce.ts"
import type { AppClient } from "../token/service.ts"

/** Codes and consent tickets live 10 minutes. */
export const CODE_TTL_SECONDS = 600
export const TICKET_TTL_SECONDS = 600

/** The consent cookie of one ticket: its name carries a prefix of the ticket's digest, so parallel screens do not collide. */
export const consentCookieName = (ticketHash: string) => `svc_consent_${ticketHash.slice(0, 16)}`

export type Redirect = { readonly _tag: "Redirect"; readonly location: string }
export type AuthorizeResult =
  | Redirect
  | {
    readonly _tag: "Consent"
    readonly screen: ConsentScreen
    readonly cookie: { readonly name: string; readonly value: string; readonly maxAgeSeconds: number }
  }

const PROVIDER_BOUND: ReadonlyArray<ConnectScope> = ["chat_app_a", "social_dm", "email", "calendar", "calendar_read", "commerce"]
const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

const isConnectScope = (value: string): value is ConnectScope => (ConnectScopes as ReadonlyArray<string>).includes(value)

const fail = (error: AuthorizeRedirectError["error"], description: string) =>
  new AuthorizeRedirectError({ error, error_description: description })

const healthcareForbidden = () => fail("invalid_scope", "healthcare_scope_forbidden")

const badRequestPage = (title: string, message: string) => new AuthorizePageError({ status: 400, title, message })
const unavailablePage = () =>
  new AuthorizePageError({ status: 500, title: "Try again", message: "The service could not answer this request. Try again shortly." })
const staleTicket = () =>
  badRequestPage("This request is no longer valid", "This consent request is unknown, expired or already answered. Return to the app and start again.")

/** `code` and `state`, or `error`, `error_description` and `state`, appended to the redirect URI's query. */
const redirectTo = (redirectUri: string, params: ReadonlyArray<readonly [string, string | null | undefined]>): Redirect => {
  const url = new URL(redirectUri)
  for (const [name, value] of params) if (value !== undefined && value !== null) url.searchParams.append(name, value)
  return { _tag: "Redirect", location: url.toString() }
}

const errorRedirect = (redirectUri: string, state: string | null | undefined, error: AuthorizeRedirectError) =>
  redirectTo(redirectUri, [["error", error.error], ["error_description", error.error_description], ["state", state]])

/** Query parameters by name; a parameter without a value counts as absent (RFC 6749 section 3.1). */
const parseQuery = (search: string): ReadonlyMap<string, ReadonlyArray<string>> => {
  const params = new Map<string, Array<string>>()
  for (const [name, value] of new URLSearchParams(search)) {
    if (value === "") continue
    params.set(name, [...(params.get(name) ?? []), value])
  }
  return params
}

/** RFC 6749 `scope`: space-separated connect scopes (default `connections`); only what this endpoint can grant. */
const parseConnectScopes = (scope: string | undefined): Effect.Effect<ReadonlyArray<ConnectScope>, AuthorizeRedirectError> => {
  if (scope === undefined) return Effect.succeed(["connections"])
  const tokens = [...new Set(scope.split(" ").filter((token) => token !== ""))]
  if (tokens.length === 0) return Effect.succeed(["connections"])
  const scopes = tokens.filter(isConnectScope)
  if (scopes.length < tokens.length) return Effect.fail(fail("invalid_scope", "The scope names an unknown connect scope."))
  if (scopes.includes("attribution")) {
    return Effect.fail(fail("invalid_scope", "attribution is set through the entitlement operation and is never requested."))
  }
  const bound = scopes.filter((scope) => PROVIDER_BOUND.includes(scope))
  if (bound.length > 0) {
    return Effect.fail(
      fail("invalid_scope", `Provider consent is not served yet: ${bound.join(" ")} cannot be granted through this endpoint.`)
    )
  }
  return Effect.succeed(scopes)
}

/** The grant after consent: what it holds (when live) plus what was asked for; `attribution` stays if held. */
const unionScopes = (held: ReadonlyArray<string>, requested: ReadonlyArray<ConnectScope>): ReadonlyArray<ConnectScope> => [
  ...new Set<ConnectScope>([...held.filter(isConnectScope), ...requested])
]

const actorOf = (app: AuthorizingAppRow): AppClient => ({
  kind: "app_client",
  appId: app.id,
  clientId: app.client_id,
  rateLimitPerMinute: APP_TIER_LIMITS[app.rate_tier]
})

interface Request {
  readonly app: AuthorizingAppRow
  readonly redirectUri: string
  readonly state: string | undefined
  readonly requested: ReadonlyArray<ConnectScope>
  readonly hint: VerifiedHint
  /** The S256 challenge to store with the code (decision 0106); null without PKCE. */
  readonly codeChallenge: string | null
  readonly now: number
}

export class OAuthAuthorize extends Context.Service<OAuthAuthorize, {
  /** `GET /oauth/authorize` with its query string (`?` optional). */
  readonly authorize: (search: string) => Effect.Effect<AuthorizeResult, AuthorizePageError>
  /** `POST /oauth/authorize/consent`: the form's fields and the request's cookies. */
  readonly consent: (
    form: ReadonlyMap<string, string>,
    cookies: Readonly<Record<string, string>>
  ) => Effect.Effect<Redirect, AuthorizePageError>
}>()("svc/OAuthAuthorize") {
  static readonly layer = Layer.effect(OAuthAuthorize)(
    Effect.gen(function*() {
      const repo = yield* AuthorizeRepo
      const oauth = yield* OAuthRepo
      const tenancy = yield* TenancyRepo
      const admin = yield* AdminRepo
      const tracking = yield* TrackingKeys
      const provisioned = yield* ProvisionedProfiles
      const audit = yield* AuditLog
      const box = yield* SecretBox

      /** What a consent ticket asked for, as `issueCode` takes it (both approvals issue from a ticket). */
      const codeRequestOf = (app: AuthorizingAppRow, ticket: TicketRow, requested: ReadonlyArray<ConnectScope>, now: number) => ({
        app,
        redirectUri: ticket.redirect_uri,
        requested,
        codeChallenge: ticket.code_challenge,
        now,
        subject: ticket.subject
      })

      const issueCode = Effect.fn("OAuthAuthorize.issueCode")(function*(
        request: Pick<Request, "app" | "redirectUri" | "requested" | "codeChallenge" | "now"> & { readonly subject: string },
        target: { readonly profileId: string; readonly grantId: string; readonly scopes: ReadonlyArray<Scope> }
      ) {
        const code = randomBase62(SECRET_LENGTH)
        yield* repo.insertCode({
          codeHash: secretDigest(code),
          appId: request.app.id,
          profileId: target.profileId,
          grantId: target.grantId,
          redirectUri: request.redirectUri,
          connectScopes: request.requested,
          scopes: target.scopes,
          subject: request.subject,
          codeChallenge: request.codeChallenge,
          expiresAt: new Date(request.now + CODE_TTL_SECONDS * 1000)
        })
        return code
      })

      /** Spec "Profile resolution at consent" 2-4: no screen, no workspace, straight back with a code. */
      const byExternalRef = Effect.fn("OAuthAuthorize.byExternalRef")(function*(request: Request) {
        const ref = request.hint.externalRef
        if (typeof ref !== "string" || ref.trim() === "") return yield* fail("invalid_request", "external_ref_required")
        return yield* oauth.transaction(Effect.gen(function*() {
          const found = yield* tenancy.findProvisionedForUpdate(request.app.id, ref)
          // A profile the app no longer holds a live grant on is not resolved either: consent without a screen never re-grants.
          const row = Option.getOrUndefined(found)
          if (row === undefined || row.grant_id === null || row.grant_revoked) {
            return yield* fail("invalid_request", "unknown_external_ref")
          }
          const healthcare = isHealthcareFamily(row)
          if (healthcare && request.requested.includes("analytics_pii")) return yield* healthcareForbidden()
          const held = row.grant_scopes ?? []
          const connectScopes = unionScopes(held, request.requested)
          const grantId = connectScopes.length === unionScopes(held, []).length
            ? row.grant_id
            : yield* admin.upsertGrant(request.app.id, row.profile_id, connectScopes)
          const code = yield* issueCode({ ...request, subject: request.hint.subject }, {
            profileId: row.profile_id,
            grantId,
            scopes: mintableScopes(connectScopes, healthcare)
          })
          yield* audit.record({
            actor: actorOf(request.app),
            action: "oauth.authorized",
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: {
              resolution: "external_ref",
              external_ref: ref,
              subject: request.hint.subject,
              requested: request.requested,
              scopes: connectScopes,
              consent_screen: false
            }
          })
          return redirectTo(request.redirectUri, [["code", code], ["state", request.state]])
        }))
      })

      /** Spec "Profile resolution at consent" 1: the email in the hint picks the profiles offered on the screen. */
      const byEmail = Effect.fn("OAuthAuthorize.byEmail")(function*(request: Request) {
        const email = request.hint.email
        if (email === undefined) return yield* fail("invalid_request", "id_token_hint must carry an email claim.")
        if (email.length > 254 || !EMAIL_SHAPE.test(email)) {
          return yield* fail("invalid_request", "id_token_hint email claim is not an email address.")
        }
        const candidates = yield* repo.findEmailCandidates(request.app.id, email)
        const eligible = request.requested.includes("analytics_pii")
          ? candidates.filter((candidate) => !isHealthcareFamily(candidate))
          : candidates
        // Matching profiles that all refuse the scope: no screen, and no new workspace either.
        if (candidates.length > 0 && eligible.length === 0) return yield* healthcareForbidden()
        const ticket = randomBase62(SECRET_LENGTH)
        const cookie = randomBase62(SECRET_LENGTH)
        const ticketHash = secretDigest(ticket)
        yield* repo.insertTicket({
          ticketHash,
          cookieHash: secretDigest(cookie),
          appId: request.app.id,
          redirectUri: request.redirectUri,
          state: request.state ?? null,
          connectScopes: request.requested,
          subject: request.hint.subject,
          email,
          name: request.hint.name ?? null,
          profileIds: eligible.map((candidate) => candidate.profile_id),
          codeChallenge: request.codeChallenge,
          expiresAt: new Date(request.now + TICKET_TTL_SECONDS * 1000)
        })
        return {
          _tag: "Consent",
          screen: {
            appName: request.app.name,
            email,
            connectScopes: request.requested,
            profiles: eligible.map((candidate) => ({
              id: candidate.profile_id,
              name: candidate.name,
              workspaceName: candidate.workspace_name
            })),
            ticket,
            redirectOrigin: new URL(request.redirectUri).origin
          },
          cookie: { name: consentCookieName(ticketHash), value: cookie, maxAgeSeconds: TICKET_TTL_SECONDS }
        } satisfies AuthorizeResult
      })

      const openSecret = (app: AuthorizingAppRow) =>
        Effect.try({
          try: () => box.open(app.jwt_secret_encrypted),
          catch: (cause) => cause
        }).pipe(
          Effect.catch((cause) =>
            Effect.andThen(
              Effect.logError("an app's jwt secret could not be opened", cause),
              Effect.fail(fail("server_error", "The app's signing secret could not be read."))
            )
          )
        )

      /** Everything after the client and redirect URI are known good: failures redirect. */
      const decide = Effect.fn("OAuthAuthorize.decide")(function*(
        app: AuthorizingAppRow,
        redirectUri: string,
        state: string | undefined,
        params: ReadonlyMap<string, ReadonlyArray<string>>
      ) {
        for (const [name, values] of params) {
          if (values.length > 1) {
            return yield* fail("invalid_request", `Parameter ${/^[a-z_]{1,32}$/.test(name) ? name : "(unnamed)"} is repeated.`)
          }
        }
        const single = (name: string) => params.get(name)?.[0]
        const responseType = single("response_type")
        if (responseType === undefined) return yield* fail("invalid_request", "response_type is required.")
        if (responseType !== "code") return yield* fail("unsupported_response_type", "Only response_type=code is served.")
        // Partner apps are confidential clients, so PKCE is optional here; when sent it must be S256 (decision 0106).
        const pkce = optionalChallenge(single("code_challenge"), single("code_challenge_method"))
        if (Result.isFailure(pkce)) return yield* fail("invalid_request", pkce.failure)
        const requested = yield* parseConnectScopes(single("scope"))
        const token = single("id_token_hint")
        if (token === undefined) return yield* fail("invalid_request", "id_token_hint is required.")
        const now = yield* Clock.currentTimeMillis
        const secret = yield* openSecret(app)
        const hint = yield* verifyHint(token, secret, app.client_id, now)
        const request: Request = { app, redirectUri, state, requested, hint, codeChallenge: pkce.success, now }
        return app.profile_resolution === "external_ref" ? yield* byExternalRef(request) : yield* byEmail(request)
      })

      const authorize = Effect.fn("OAuthAuthorize.authorize")(function*(search: string) {
        const params = parseQuery(search)
        const clientIds = params.get("client_id") ?? []
        const redirectUris = params.get("redirect_uri") ?? []
        const [clientId] = clientIds
        if (clientId === undefined || clientIds.length > 1) {
          return yield* badRequestPage("Unknown app", "The request does not name exactly one client_id.")
        }
        const found = yield* repo.findApp(clientId).pipe(Effect.catchTag("DatabaseUnavailable", () => Effect.fail(unavailablePage())))
        if (Option.isNone(found)) return yield* badRequestPage("Unknown app", "No app is registered under this client_id.")
        const [redirectUri] = redirectUris
        if (redirectUri === undefined || redirectUris.length > 1 || !found.value.redirect_uris.includes(redirectUri)) {
          return yield* badRequestPage(
            "Unregistered redirect_uri",
            "The redirect_uri is missing, repeated, or not exactly one of the app's registered redirect URIs."
          )
        }
        const states = params.get("state") ?? []
        const state = states.length === 1 ? states[0] : undefined
        return yield* decide(found.value, redirectUri, state, params).pipe(
          Effect.catchTag("DatabaseUnavailable", () => Effect.fail(fail("server_error", "The request could not be completed. Retry it."))),
          Effect.catchTag("AuthorizeRedirectError", (error) => Effect.succeed(errorRedirect(redirectUri, state, error)))
        )
      })

      /** Approval on an email-matched profile: the grant gains the requested scopes. */
      const approveExisting = Effect.fn("OAuthAuthorize.approveExisting")(function*(
        app: AuthorizingAppRow,
        ticket: TicketRow,
        requested: ReadonlyArray<ConnectScope>,
        chosen: string,
        now: number
      ) {
        const owned = yield* tenancy.findOwnedForUpdate(app.id, chosen)
        if (
          Option.isNone(owned) || owned.value.archived || owned.value.workspace_archived ||
          owned.value.email?.toLowerCase() !== ticket.email.toLowerCase()
        ) {
          return yield* fail("invalid_request", "The chosen profile is no longer available; start again.")
        }
        const row = owned.value
        const healthcare = isHealthcareFamily(row)
        if (healthcare && requested.includes("analytics_pii")) return yield* healthcareForbidden()
        const held = row.grant_id === null || row.grant_revoked ? [] : (row.grant_scopes ?? [])
        const connectScopes = unionScopes(held, requested)
        const grantId = row.grant_id !== null && !row.grant_revoked && connectScopes.length === unionScopes(held, []).length
          ? row.grant_id
          : yield* admin.upsertGrant(app.id, row.profile_id, connectScopes)
        const code = yield* issueCode(codeRequestOf(app, ticket, requested, now), {
          profileId: row.profile_id,
          grantId,
          scopes: mintableScopes(connectScopes, healthcare)
        })
        yield* audit.record({
          actor: actorOf(app),
          action: "oauth.authorized",
          targetKind: "profile",
          targetId: row.profile_id,
          profileId: row.profile_id,
          workspaceId: row.workspace_id,
          details: { resolution: "email", subject: ticket.subject, requested, scopes: connectScopes, consent_screen: true }
        })
        return code
      })

      /**
       * The email-keyed branch: no profile of the app matches, so approval provisions a workspace
       * and profile for the app, owned by the person (found or created by email, no password),
       * through provisioning's own insert, without an external ref (email-created profiles carry
       * none; spec "Profile resolution at consent" 4).
       */
      const approveNew = Effect.fn("OAuthAuthorize.approveNew")(function*(
        app: AuthorizingAppRow,
        ticket: TicketRow,
        requested: ReadonlyArray<ConnectScope>,
        now: number
      ) {
        const name = ticket.name ?? ticket.email
        const claimed = yield* provisioned.insert({
          appId: app.id,
          externalRef: null,
          name,
          email: ticket.email,
          currency: null,
          reportingCurrency: null,
          privacyMode: "standard",
          connectScopes: requested
        })
        const created = Option.isSome(claimed) ? yield* tenancy.findOwnedForUpdate(app.id, claimed.value) : Option.none()
        const row = Option.getOrUndefined(created)
        if (row === undefined || row.grant_id === null) {
          return yield* Effect.die("a profile provisioned at consent could not be read back")
        }
        // As partner provisioning does: every provisioned profile has a live tracking key.
        yield* tracking.ensure(row.profile_id)
        yield* audit.record({
          actor: actorOf(app),
          action: "profile.provisioned",
          targetKind: "profile",
          targetId: row.profile_id,
          profileId: row.profile_id,
          workspaceId: row.workspace_id,
          details: { via: "oauth_consent", subject: ticket.subject, scopes: requested, privacy_mode: "standard" }
        })
        const code = yield* issueCode(codeRequestOf(app, ticket, requested, now), {
          profileId: row.profile_id,
          grantId: row.grant_id,
          scopes: mintableScopes(requested, false)
        })
        yield* audit.record({
          actor: actorOf(app),
          action: "oauth.authorized",
          targetKind: "profile",
          targetId: row.profile_id,
          profileId: row.profile_id,
          workspaceId: row.workspace_id,
          details: {
            resolution: "email",
            subject: ticket.subject,
            requested,
            scopes: requested,
            consent_screen: true,
            created_profile: true
          }
        })
        return code
      })

      const consent = Effect.fn("OAuthAuthorize.consent")(function*(
        form: ReadonlyMap<string, string>,
        cookies: Readonly<Record<string, string>>
      ) {
        const presented = form.get("ticket")
        if (presented === undefined || !isSecretShaped(presented)) return yield* staleTicket()
        const decision = form.get("decision")
        if (decision !== "approve" && decision !== "deny") {
          return yield* badRequestPage("Choose Allow or Deny", "The consent form must carry decision=approve or decision=deny.")
        }
        const ticketHash = secretDigest(presented)
        const now = yield* Clock.currentTimeMillis
        return yield* oauth.transaction(Effect.gen(function*() {
          const found = yield* repo.lockTicket(ticketHash, new Date(now))
          if (Option.isNone(found)) return yield* staleTicket()
          const ticket = found.value
          // SameSite=Lax keeps the cookie off a cross-site POST: such a post cannot answer the screen.
          const cookie = cookies[consentCookieName(ticketHash)]
          if (cookie === undefined || !digestsEqual(secretDigest(cookie), ticket.cookie_hash)) {
            return yield* new AuthorizePageError({
              status: 403,
              title: "Answer from the consent screen",
              message: "This answer did not come from the consent screen it belongs to. Return to the app and start again."
            })
          }
          if (ticket.used || ticket.expired) return yield* staleTicket()
          const app = yield* repo.findAppById(ticket.app_id)
          if (Option.isNone(app) || !app.value.redirect_uris.includes(ticket.redirect_uri)) {
            return yield* badRequestPage("Unknown app", "The app that asked is no longer registered with this redirect URI.")
          }
          const requested = ticket.connect_scopes.filter(isConnectScope)
          let chosen: string | undefined
          if (decision === "approve" && ticket.profile_ids.length > 0) {
            const picked = form.get("profile_id")?.toLowerCase() ?? (ticket.profile_ids.length === 1 ? ticket.profile_ids[0] : undefined)
            chosen = ticket.profile_ids.find((id) => id === picked)
            if (chosen === undefined) return yield* badRequestPage("Choose a profile", "Choose one of the profiles offered.")
          }
          yield* repo.markTicketUsed(ticket.id, new Date(now))
          const back = (error: AuthorizeRedirectError) => errorRedirect(ticket.redirect_uri, ticket.state, error)
          if (decision === "deny") return back(fail("access_denied", "The person denied the request."))
          // A refusal from here on still spends the ticket: it is answered as a redirect, and committed.
          return yield* (chosen === undefined
            ? approveNew(app.value, ticket, requested, now)
            : approveExisting(app.value, ticket, requested, chosen, now)).pipe(
              Effect.map((code) => redirectTo(ticket.redirect_uri, [["code", code], ["state", ticket.state]])),
              Effect.catchTag("AuthorizeRedirectError", (error) => Effect.succeed(back(error)))
            )
        })).pipe(Effect.catchTag("DatabaseUnavailable", () => Effect.fail(unavailablePage())))
      })

      return { authorize, consent }
    })
  ).pipe(Layer.provide([AuthorizeRepo.layer, OAuthRepo.layer, TenancyRepo.layer, ProvisionedProfiles.layer, AdminRepo.layer, AuditLog.layer]))
}
