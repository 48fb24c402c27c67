import { Effect, Layer, Option, Redacted } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { appPrincipal, CredentialStore, type PrincipalShape } from "../../../kernel/principal.ts"
import { ownOriginOf, requestSiteOf } from "../../same-origin.ts"
import { SESSION_COOKIE } from "../../sessions/service.ts"
import { AppConfig } from "../../../platform/config.ts"
import { mediaTypeOf } from "../../../platform/request-info.ts"
import { handoffAcceptedPage, handoffFormPage, handoffUnusablePage } from "./pages.ts"
import { DpaHandoffs } from "./service.ts"
import { groupApi, publicGroupApi } from "../../../http/group-api.ts"
import { DpaHandoffApi, DpaHandoffPagesApi } from "./api.ts"

const UNUSABLE = "It is unknown, expired or already used. Ask the app that sent it for a new one."
const SIGN_IN = "Sign in to the console as an owner or admin of the profile's workspace, then open this link again."
const CROSS_SITE = "A form posted from another site cannot accept the DPA: open the link itself."
const NOT_YOURS = "You are not an owner or admin of this profile's workspace: sign in as one, or forward the link."

export const DpaHandoffHandlers = HttpApiBuilder.group(groupApi(DpaHandoffApi), "dpaHandoff", (handlers) =>
  Effect.gen(function*() {
    const handoffs = yield* DpaHandoffs
    return handlers.handle("mintDpaHandoff", ({ payload }) =>
      Effect.flatMap(appPrincipal, (app) => Effect.map(handoffs.mint(app, payload), (data) => ({ data }))))
  })).pipe(Layer.provide(DpaHandoffs.layer))

/** Raw handlers: every outcome is an HTML page, never the JSON envelope. */
export const DpaHandoffPagesHandlers = HttpApiBuilder.group(publicGroupApi(DpaHandoffPagesApi), "dpaHandoffPages", (handlers) =>
  Effect.gen(function*() {
    const handoffs = yield* DpaHandoffs
    const credentials = yield* CredentialStore
    const ownOrigin = ownOriginOf((yield* AppConfig).baseUrl)
    /** The signed-in person from the console's session cookie; None without a live session. */
    const sessionOf = (request: HttpServerRequest.HttpServerRequest) => {
      const cookie = request.cookies[SESSION_COOKIE]
      return cookie === undefined || cookie === ""
        ? Effect.succeed(Option.none<PrincipalShape>())
        : Effect.map(credentials.session(Redacted.make(cookie)), Option.filter((principal) => principal.kind === "session"))
    }
    // The shared check (decision 0107): `Origin: null` is what this no-referrer page's own post sends.
    const isCrossSite = (request: HttpServerRequest.HttpServerRequest) => requestSiteOf(request, ownOrigin) === "cross-site"
    return handlers
      .handleRaw("dpaHandoffPage", ({ request }) =>
        Effect.gen(function*() {
          const session = yield* sessionOf(request)
          if (Option.isNone(session)) return handoffUnusablePage(SIGN_IN)
          const actor = session.value
          const token = new URL(request.url, "http://localhost").searchParams.get("token") ?? ""
          return yield* handoffs.view(actor, token).pipe(
            Effect.map(Option.match({
              onNone: () => handoffUnusablePage(UNUSABLE),
              onSome: (view) => handoffFormPage({ ...view, error: null })
            })),
            Effect.catchTag("NotFound", () => Effect.succeed(handoffUnusablePage(NOT_YOURS)))
          )
        }))
      .handleRaw("dpaHandoffForm", ({ request }) =>
        Effect.gen(function*() {
          if (isCrossSite(request)) return handoffUnusablePage(CROSS_SITE)
          const session = yield* sessionOf(request)
          if (Option.isNone(session)) return handoffUnusablePage(SIGN_IN)
          const actor = session.value
          if (mediaTypeOf(request.headers["content-type"]) !== "application/x-www-form-urlencoded") {
            return handoffUnusablePage(UNUSABLE)
          }
          const form = new URLSearchParams(yield* Effect.orDie(request.text))
          const token = form.get("token") ?? ""
          const version = form.get("version") ?? ""
          return yield* handoffs.accept(actor, token, version).pipe(
            Effect.map(Option.match({ onNone: () => handoffUnusablePage(UNUSABLE), onSome: handoffAcceptedPage })),
            Effect.catchTags({
              NotFound: () => Effect.succeed(handoffUnusablePage(NOT_YOURS)),
              InsufficientScope: () => Effect.succeed(handoffUnusablePage(NOT_YOURS)),
              ValidationError: (error) =>
                Effect.map(handoffs.view(actor, token), Option.match({
                  onNone: () => handoffUnusablePage(UNUSABLE),
                  onSome: (view) => handoffFormPage({ ...view, error: error.message })
                })).pipe(Effect.catchTag("NotFound", () => Effect.succeed(handoffUnusablePage(NOT_YOURS))))
            })
          )
        }))
  })).pipe(Layer.provide(DpaHandoffs.layer))
