/**
 * `/oauth/token`, `/oauth/revoke`, `/oauth/authorize` and its consent form. The bodies are
 * read here rather than decoded by HttpApi, so a malformed request answers `invalid_request`
 * in the OAuth format (or, for the browser endpoints, a page) instead of the envelope's
 * `validation_error`.
 */
import { Effect, Layer } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { AuthorizePageError, noStore, OAuthInvalidClient, OAuthRequestError } from "../../../schema/oauth.ts"
import { consentPage, errorPage, pageHeaders } from "./authorize/pages.ts"
import { type AuthorizeResult, OAuthAuthorize, type Redirect } from "./authorize/service.ts"
import { type ClientCredentials, OAuthService } from "./token/service.ts"
import { parseBasicCredentials } from "../../kernel/credentials/basic.ts"
import { parseJsonOrUndefined } from "../../platform/json.ts"
import { mediaTypeOf } from "../../platform/request-info.ts"
import { publicGroupApi } from "../../http/group-api.ts"
import { OAuthApi } from "./api.ts"

type Params = ReadonlyMap<string, string>

const invalidRequest = (description: string) =>
  new OAuthRequestError({ error: "invalid_request", error_description: description })

const mediaType = (request: HttpServerRequest.HttpServerRequest) => mediaTypeOf(request.headers["content-type"])

/**
 * The request's parameters: a form (RFC 6749) or the same fields as a JSON object. A
 * parameter without a value counts as absent (section 3.1); a repeated one is refused.
 */
const readParams = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<Params, OAuthRequestError> =>
  Effect.flatMap(Effect.orDie(request.text), (text) => {
    const params = new Map<string, string>()
    const type = mediaType(request)
    if (type === "application/x-www-form-urlencoded" || (type === "" && text === "")) {
      for (const [name, value] of new URLSearchParams(text)) {
        if (params.has(name)) return Effect.fail(invalidRequest(`Parameter ${formSafe(name)} is repeated.`))
        if (value !== "") params.set(name, value)
      }
      return Effect.succeed(params)
    }
    if (type === "application/json") {
      const body = parseJsonOrUndefined(text)
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return Effect.fail(invalidRequest("The body is not a JSON object."))
      }
      for (const [name, value] of Object.entries(body)) {
        if (typeof value !== "string") return Effect.fail(invalidRequest(`Parameter ${formSafe(name)} must be a string.`))
        if (value !== "") params.set(name, value)
      }
      return Effect.succeed(params)
    }
    return Effect.fail(invalidRequest("Send the parameters as application/x-www-form-urlencoded."))
  })

/** `error_description` allows printable ASCII without `"` and `\` (RFC 6749 section 5.2). */
const formSafe = (name: string) => /^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$/.test(name) ? name : "(unnamed)"

const authenticationRequired = () =>
  new OAuthInvalidClient({
    error_description: "Client authentication is required: HTTP Basic, or client_id and client_secret in the body."
  })

/** client_secret_basic or client_secret_post, exactly one of them (RFC 6749 section 2.3). */
const clientCredentialsOf = (
  authorization: string | undefined,
  params: Params
): Effect.Effect<ClientCredentials, OAuthRequestError | OAuthInvalidClient> => {
  const postedId = params.get("client_id")
  const postedSecret = params.get("client_secret")
  if (authorization === undefined) {
    if (postedSecret === undefined) return Effect.fail(authenticationRequired())
    if (postedId === undefined) return Effect.fail(invalidRequest("client_id is required with client_secret."))
    return Effect.succeed({ clientId: postedId, clientSecret: postedSecret })
  }
  if (postedSecret !== undefined) {
    return Effect.fail(invalidRequest("Use one client authentication method: HTTP Basic or client_secret in the body, not both."))
  }
  const basic = /^Basic\s+(\S+)\s*$/i.exec(authorization)?.[1]
  const credentials = basic === undefined ? undefined : parseBasicCredentials(basic)
  if (credentials === undefined) return Effect.fail(authenticationRequired())
  const { clientId, secret: clientSecret } = credentials
  if (postedId !== undefined && postedId !== clientId) {
    return Effect.fail(invalidRequest("client_id in the body differs from the one in the Authorization header."))
  }
  return Effect.succeed({ clientId, clientSecret })
}

/** Where the consent cookie is sent: the consent form's path only. */
const CONSENT_COOKIE_PATH = "/oauth/authorize"

const redirectResponse = (redirect: Redirect) =>
  HttpServerResponse.redirect(redirect.location, {
    status: 302,
    headers: { "cache-control": "no-store", pragma: "no-cache", "referrer-policy": "no-referrer" }
  })

const resultResponse = (result: AuthorizeResult) => {
  if (result._tag === "Redirect") return redirectResponse(result)
  return HttpServerResponse.html(consentPage(result.screen)).pipe(
    HttpServerResponse.setHeaders(pageHeaders(result.screen.redirectOrigin)),
    HttpServerResponse.setCookieUnsafe(result.cookie.name, result.cookie.value, {
      httpOnly: true,
      secure: true,
      sameSite: "lax",
      path: CONSENT_COOKIE_PATH,
      maxAge: `${result.cookie.maxAgeSeconds} seconds`
    })
  )
}

/** A page answered with an error status (the envelope middleware leaves HTML answers as they are). */
const pageResponse = (error: AuthorizePageError) =>
  Effect.succeed(
    HttpServerResponse.html(errorPage(error.title, error.message)).pipe(
      HttpServerResponse.setStatus(error.status),
      HttpServerResponse.setHeaders(pageHeaders())
    )
  )

export const OAuthHandlers = HttpApiBuilder.group(publicGroupApi(OAuthApi), "oauth", (handlers) =>
  Effect.gen(function*() {
    const oauth = yield* OAuthService
    const authorization = yield* OAuthAuthorize

    const authenticated = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const params = yield* readParams(request)
        const credentials = yield* clientCredentialsOf(request.headers["authorization"], params)
        const app = yield* oauth.authenticate(credentials)
        return { params, app }
      })

    return handlers
      .handleRaw("token", ({ request }) =>
        Effect.gen(function*() {
          const { params, app } = yield* authenticated(request)
          const grantType = params.get("grant_type")
          if (grantType === undefined) return yield* invalidRequest("grant_type is required.")
          if (grantType !== "client_credentials" && grantType !== "authorization_code") {
            return yield* new OAuthRequestError({
              error: "unsupported_grant_type",
              error_description: "This endpoint serves grant_type=client_credentials and grant_type=authorization_code."
            })
          }
          const issued = grantType === "client_credentials"
            ? yield* oauth.clientCredentials(app, { profileId: params.get("profile_id"), scope: params.get("scope") })
            : yield* oauth.authorizationCode(app, {
              code: params.get("code"),
              redirectUri: params.get("redirect_uri"),
              codeVerifier: params.get("code_verifier")
            })
          return HttpApiSchema.withHeaders({
            body: {
              access_token: issued.accessToken,
              token_type: "Bearer" as const,
              scope: issued.scopes.join(" "),
              profile_id: issued.profileId
            },
            headers: noStore
          })
        }))
      .handleRaw("revoke", ({ request }) =>
        Effect.gen(function*() {
          const { params, app } = yield* authenticated(request)
          const token = params.get("token")
          if (token === undefined) return yield* invalidRequest("token is required.")
          yield* oauth.revoke(app, token)
        }))
      .handleRaw("authorize", ({ request }) =>
        authorization.authorize(new URL(request.url, "http://svc.invalid").search).pipe(
          Effect.map(resultResponse),
          Effect.catchTag("AuthorizePageError", pageResponse)
        ))
      .handleRaw("consent", ({ request }) =>
        Effect.gen(function*() {
          if (mediaType(request) !== "application/x-www-form-urlencoded") {
            return yield* new AuthorizePageError({
              status: 400,
              title: "Unreadable answer",
              message: "The consent form must be posted as application/x-www-form-urlencoded."
            })
          }
          const form = yield* readParams(request).pipe(
            Effect.mapError((error) => new AuthorizePageError({ status: 400, title: "Unreadable answer", message: error.error_description }))
          )
          return redirectResponse(yield* authorization.consent(form, request.cookies))
        }).pipe(Effect.catchTag("AuthorizePageError", pageResponse)))
  })).pipe(Layer.provide([OAuthService.layer, OAuthAuthorize.layer]))
