/**
 * `/oauth/mcp/*` and the metadata document (decision 0023). Every handler is raw: bodies and
 * query strings are read here, so a malformed request answers in the OAuth format (or as an
 * HTML page for the person), never as the envelope's `validation_error`.
 */
import { Effect, Layer, Option } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { McpRegistrationError } from "../../../schema/mcp-oauth.ts"
import { noStore, OAuthRequestError } from "../../../schema/oauth.ts"
import {
  checkFormPost,
  FORM_TOKEN_FIELD,
  type FormGrant,
  formGrantFor,
  ownOriginOf,
  requestSiteOf,
  withFormCookie
} from "../same-origin.ts"
import { SESSION_COOKIE, SESSION_HOURS } from "../sessions/service.ts"
import { AppConfig } from "../../platform/config.ts"
import { parseJsonOrUndefined } from "../../platform/json.ts"
import { mediaTypeOf, peerAddressOf } from "../../platform/request-info.ts"
import { consentPage, errorPage, redirectResponse, signInPage } from "./pages.ts"
import {
  type AuthorizationRequest,
  MCP_TOKEN_DAYS,
  McpOAuthService,
  paramsOf,
  type RequestParams
} from "./service.ts"
import { publicGroupApi } from "../../http/group-api.ts"
import { McpOAuthApi } from "./api.ts"

const cookieOptions = { httpOnly: true, secure: true, sameSite: "lax", path: "/" } as const

const mediaType = (request: HttpServerRequest.HttpServerRequest) => mediaTypeOf(request.headers["content-type"])

const addressOf = (request: HttpServerRequest.HttpServerRequest) => Option.getOrElse(peerAddressOf(request), () => "unknown")

const queryOf = (request: HttpServerRequest.HttpServerRequest): RequestParams =>
  paramsOf(new URL(request.url, "http://localhost").searchParams)

/** An `application/x-www-form-urlencoded` body; None for another media type. */
const formOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(Effect.orDie(request.text), (text): Option.Option<RequestParams> => {
    const type = mediaType(request)
    return type === "application/x-www-form-urlencoded" || (type === "" && text === "")
      ? Option.some(paramsOf(new URLSearchParams(text)))
      : Option.none()
  })

const invalidRequest = (description: string) =>
  new OAuthRequestError({ error: "invalid_request", error_description: description })

/** The token request: a form (RFC 6749) or the same fields as a JSON object of strings. */
const tokenParamsOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(Effect.orDie(request.text), (text): Effect.Effect<RequestParams, OAuthRequestError> => {
    const type = mediaType(request)
    if (type === "application/x-www-form-urlencoded" || (type === "" && text === "")) {
      return Effect.succeed(paramsOf(new URLSearchParams(text)))
    }
    if (type === "application/json") {
      const body = parseJsonOrUndefined(text)
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return Effect.fail(invalidRequest("The body is not a JSON object."))
      }
      const entries: Array<readonly [string, string]> = []
      for (const [name, value] of Object.entries(body)) {
        if (typeof value !== "string") return Effect.fail(invalidRequest("Every parameter must be a string."))
        entries.push([name, value])
      }
      return Effect.succeed(paramsOf(entries))
    }
    return Effect.fail(invalidRequest("Send the parameters as application/x-www-form-urlencoded."))
  })

/** The error page with an error status (the envelope middleware leaves HTML answers as they are). */
const errorAnswer = (message: string, status: 400 | 403 = 400) =>
  Effect.succeed(HttpServerResponse.setStatus(errorPage(message), status))

const crossSite = () => errorAnswer("A form posted from another site cannot answer this consent screen.", 403)
const crossSiteSignIn = () => errorAnswer("A sign-in posted from another site is refused: nobody was signed in.", 403)
const staleSignIn = () =>
  errorAnswer(
    "This sign-in form was not opened here, or has expired (its form token does not match): nobody was signed in.",
    403
  )

export const McpOAuthHandlers = HttpApiBuilder.group(publicGroupApi(McpOAuthApi), "mcpOAuth", (handlers) =>
  Effect.gen(function*() {
    const service = yield* McpOAuthService
    const ownOrigin = ownOriginOf((yield* AppConfig).baseUrl)

    const consent = (request: AuthorizationRequest, session: { readonly email: string }, ticket: string) =>
      consentPage({
        clientName: request.client.client_name,
        clientId: request.client.client_id,
        redirectUri: request.redirectUri,
        grants: request.grants,
        email: session.email,
        ticket,
        tokenDays: MCP_TOKEN_DAYS
      })

    /** The sign-in form with its form token; the cookie the token matches is set with it when new. */
    const signInForm = (
      params: RequestParams,
      request: AuthorizationRequest,
      grant: FormGrant,
      email: string,
      error: string | null
    ) =>
      withFormCookie(
        signInPage({
          request: params.values,
          clientName: request.client.client_name,
          clientId: request.client.client_id,
          redirectUri: request.redirectUri,
          email,
          error,
          formToken: grant.token
        }),
        grant
      )

    return handlers
      .handle("metadata", () => Effect.succeed(service.metadata()))
      .handleRaw("register", ({ request }) =>
        Effect.gen(function*() {
          const text = yield* Effect.orDie(request.text)
          if (mediaType(request) !== "application/json") {
            return yield* new McpRegistrationError({
              error: "invalid_client_metadata",
              error_description: "Send the client metadata as application/json."
            })
          }
          const registered = yield* service.register(parseJsonOrUndefined(text), addressOf(request))
          return HttpApiSchema.withHeaders({ body: registered, headers: noStore })
        }))
      .handleRaw("authorize", ({ request }) =>
        Effect.gen(function*() {
          const params = queryOf(request)
          const check = yield* service.checkAuthorization(params)
          if (check._tag === "ErrorPage") return yield* errorAnswer(check.message)
          if (check._tag === "Redirect") return redirectResponse(check.location)
          const session = yield* service.sessionOf(request.cookies[SESSION_COOKIE])
          if (Option.isNone(session)) return signInForm(params, check.request, formGrantFor(request), "", null)
          const ticket = yield* service.issueTicket(session.value, check.request)
          return consent(check.request, session.value, ticket)
        }))
      .handleRaw("signIn", ({ request }) =>
        Effect.gen(function*() {
          // Login CSRF (decision 0107): the site the browser names first, then the form token.
          const form = yield* formOf(request)
          const guard = checkFormPost(
            request,
            ownOrigin,
            Option.isSome(form) ? form.value.values.get(FORM_TOKEN_FIELD) : undefined
          )
          if (guard._tag === "Refused" && guard.reason === "cross_site") return yield* crossSiteSignIn()
          if (Option.isNone(form)) return yield* errorAnswer("The sign-in form must be posted as a form.")
          if (guard._tag === "Refused") return yield* staleSignIn()
          const params = form.value
          const check = yield* service.checkAuthorization(params)
          if (check._tag === "ErrorPage") return yield* errorAnswer(check.message)
          if (check._tag === "Redirect") return redirectResponse(check.location)
          const email = params.values.get("email") ?? ""
          const outcome = yield* service.signIn(email, params.values.get("password") ?? "").pipe(
            Effect.map((signedIn) => ({ _tag: "SignedIn" as const, signedIn })),
            Effect.catchTag("SignInRefused", (refused) => Effect.succeed({ _tag: "Refused" as const, refused }))
          )
          if (outcome._tag === "Refused") {
            const again = signInForm(params, check.request, guard.grant, email, outcome.refused.message)
            const retryAfter = outcome.refused.retryAfterSeconds
            // Throttled: the form again, as the 429 it is.
            return retryAfter === undefined ? again : again.pipe(
              HttpServerResponse.setStatus(429),
              HttpServerResponse.setHeader("retry-after", String(retryAfter))
            )
          }
          const signedIn = outcome.signedIn
          const ticket = yield* service.issueTicket(signedIn.session, check.request)
          return HttpServerResponse.setCookieUnsafe(
            consent(check.request, signedIn.session, ticket),
            SESSION_COOKIE,
            signedIn.secret,
            { ...cookieOptions, maxAge: `${SESSION_HOURS} hours` }
          )
        }))
      .handleRaw("decide", ({ request }) =>
        Effect.gen(function*() {
          // The ticket (bound to the session) is this form's token; the site check is the shared one.
          if (requestSiteOf(request, ownOrigin) === "cross-site") return yield* crossSite()
          const form = yield* formOf(request)
          if (Option.isNone(form)) return yield* errorAnswer("The consent form must be posted as a form.")
          const ticket = form.value.values.get("ticket")
          const decision = form.value.values.get("decision")
          if (ticket === undefined || (decision !== "approve" && decision !== "deny") || form.value.repeated.size > 0) {
            return yield* errorAnswer("The consent form was not answered: approve or deny on the consent screen.")
          }
          const session = yield* service.sessionOf(request.cookies[SESSION_COOKIE])
          if (Option.isNone(session)) return yield* errorAnswer("You are not signed in, or your session has ended.")
          const location = yield* service.decide(ticket, session.value, decision === "approve")
          if (Option.isNone(location)) {
            return yield* errorAnswer("This consent screen has expired, was already answered, or belongs to another sign-in.")
          }
          return redirectResponse(location.value)
        }))
      .handleRaw("token", ({ request }) =>
        Effect.gen(function*() {
          const params = yield* tokenParamsOf(request)
          const issued = yield* service.exchange(params)
          return HttpApiSchema.withHeaders({ body: issued, headers: noStore })
        }))
  })).pipe(Layer.provide(McpOAuthService.layer))
