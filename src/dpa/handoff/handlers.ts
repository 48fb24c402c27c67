import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { appPrincipal, Principal } from "../../auth/principal.ts"
import { Api } from "../../http/api.ts"
import { mediaTypeOf } from "../../platform/request-info.ts"
import { handoffAcceptedPage, handoffFormPage, handoffUnusablePage } from "./pages.ts"
import { DpaHandoffs } from "./service.ts"

const UNUSABLE = "It is unknown, expired or already used. Ask the app that sent it for a new one."
const NOT_YOURS = "You are not an owner or admin of this profile's workspace: sign in as one, or forward the link."

export const DpaHandoffHandlers = HttpApiBuilder.group(Api, "dpaHandoff", (handlers) =>
  Effect.gen(function*() {
    const handoffs = yield* DpaHandoffs
    return handlers.handle("mintDpaHandoff", ({ payload }) =>
      Effect.flatMap(appPrincipal, (app) => Effect.map(handoffs.mint(app, payload), (data) => ({ data }))))
  })).pipe(Layer.provide(DpaHandoffs.layer))

/** Raw handlers: every outcome is an HTML page, never the JSON envelope. */
export const DpaHandoffPagesHandlers = HttpApiBuilder.group(Api, "dpaHandoffPages", (handlers) =>
  Effect.gen(function*() {
    const handoffs = yield* DpaHandoffs
    return handlers
      .handleRaw("dpaHandoffPage", ({ request }) =>
        Effect.gen(function*() {
          const actor = yield* Principal
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
          const actor = yield* Principal
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
