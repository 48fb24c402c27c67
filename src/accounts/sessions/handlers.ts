import { Effect, Layer, Option } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { InsufficientScope, Unauthorized } from "../../../schema/errors.ts"
import { AppConfig } from "../../platform/config.ts"
import { Principal } from "../../kernel/principal.ts"
import { isForeignApiCall, ownOriginOf } from "../same-origin.ts"
import { Csrf } from "../../http/csrf.ts"
import { CSRF_HEADER, SESSION_COOKIE, SESSION_HOURS, Sessions } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { SessionsApi } from "./api.ts"

const cookieOptions = { httpOnly: true, secure: true, sameSite: "lax", path: "/" } as const

const onResponse = (f: (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.HttpServerResponse) =>
  HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(f(response)))

export const SessionsHandlers = HttpApiBuilder.group(groupApi(SessionsApi), "sessions", (handlers) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const ownOrigin = ownOriginOf((yield* AppConfig).baseUrl)
    return handlers.handleAll({
      createSession: ({ payload }) =>
        Effect.gen(function*() {
          // Login CSRF (decision 0107): a browser posting from another site signs no one in.
          if (isForeignApiCall(yield* HttpServerRequest.HttpServerRequest, ownOrigin)) {
            return yield* new InsufficientScope({
              message: "A sign-in posted from another site is refused: sign in from this service's own origin, " +
                "or from a client that is not a browser.",
              reason: "csrf"
            })
          }
          const session = yield* sessions.login(payload.email, payload.password)
          yield* onResponse((response) =>
            HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, session.secret, {
              ...cookieOptions,
              maxAge: `${SESSION_HOURS} hours`
            })
          )
          return {
            data: {
              user_id: session.userId,
              email: session.email,
              csrf_token: session.csrfToken,
              expires_at: session.expiresAt
            }
          }
        }),
      deleteCurrentSession: () =>
        Effect.gen(function*() {
          yield* sessions.logout(yield* Principal)
          yield* onResponse((response) => HttpServerResponse.expireCookieUnsafe(response, SESSION_COOKIE, cookieOptions))
        }),
      createMcpToken: ({ payload }) =>
        Effect.gen(function*() {
          const data = yield* sessions.mintMcpToken(yield* Principal, payload)
          return { data }
        })
    })
  })).pipe(Layer.provide(Sessions.layer))

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/** The CSRF check for session-authenticated unsafe requests (decision 0021). */
export const CsrfLayer = Layer.effect(Csrf)(
  Effect.gen(function*() {
    const sessions = yield* Sessions
    return (httpEffect) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (SAFE_METHODS.has(request.method.toUpperCase())) return yield* httpEffect
        const principal = yield* Principal
        if (principal.kind !== "session") return yield* httpEffect
        const matches = yield* sessions.csrfMatches(principal.sessionId, request.headers[CSRF_HEADER])
        if (Option.isNone(matches)) {
          // Revoked or expired since the credential cache last saw it: writes stop at once.
          return yield* new Unauthorized({ message: "Missing, invalid, expired or revoked credential." })
        }
        if (!matches.value) {
          return yield* new InsufficientScope({
            message: "A signed-in session must send its CSRF token in the X-CSRF-Token header on this method.",
            reason: "csrf"
          })
        }
        return yield* httpEffect
      })
  })
).pipe(Layer.provide(Sessions.layer))
