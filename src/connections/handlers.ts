import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { HandOff } from "./handoffs/entity.ts"
import { routeProfileCall } from "../platform/entity-calls.ts"
import { Principal } from "../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, toPage } from "../platform/pagination.ts"
import { ProfileAccess } from "../kernel/access.ts"
import { returnLocation, Handoffs } from "./handoffs/service.ts"
import { ProviderHooks } from "./hooks/service.ts"
import { continueCard, outcomePage, redirectTo, refusedPage } from "./pages.ts"
import { Connections } from "./service.ts"
import { isProviderKind } from "./providers/registry.ts"
import { groupApi, publicGroupApi } from "../http/group-api.ts"
import { ConnectionsApi, ConnectPagesApi, HooksApi } from "./api.ts"

export const ConnectionsHandlers = HttpApiBuilder.group(groupApi(ConnectionsApi), "connections", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const handoffs = yield* Handoffs
    const connections = yield* Connections
    return handlers.handleAll({
      listConnections: ({ query }) =>
        Effect.gen(function*() {
          const profile = yield* access.current
          const limit = query.limit ?? DEFAULT_PAGE_SIZE
          const rows = yield* connections.list(profile, limit, yield* keysetCursor(query.cursor))
          return toPage(rows, limit, (row) => row)
        }),
      mintHandoff: ({ params, payload }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const profile = yield* access.current
          return { data: yield* handoffs.mint(principal, profile, params.provider, payload) }
        }),
      getHandoff: ({ params }) =>
        Effect.gen(function*() {
          const profile = yield* access.current
          return { data: yield* handoffs.view(profile, params.handoffId) }
        }),
      listPending: ({ params }) =>
        Effect.gen(function*() {
          const profile = yield* access.current
          return { data: yield* handoffs.pending(profile, params.provider) }
        }),
      finalizePending: ({ params, payload }) =>
        Effect.gen(function*() {
          const profile = yield* access.current
          return { data: yield* handoffs.finalize(profile, params.provider, payload) }
        }),
      disconnect: ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const profile = yield* access.current
          const done = yield* connections.disconnect(principal, profile, params.id)
          return { data: { id: done.id, provider: done.provider, disconnected: true as const } }
        }),
      releaseGrant: ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const profile = yield* access.current
          const result = yield* connections.releaseGrant(principal, profile, params.id)
          return { data: { id: params.id, released: result.released, revoked_keys: result.revokedKeys } }
        })
    })
  })).pipe(Layer.provide([ProfileAccess.layer, Handoffs.layer, Connections.layer]))

/** Raw handlers: browsers get redirects and pages, never the JSON envelope (except when the database is away). */
export const ConnectPagesHandlers = HttpApiBuilder.group(publicGroupApi(ConnectPagesApi), "connectPages", (handlers) =>
  Effect.gen(function*() {
    const handoffs = yield* Handoffs
    const makeHandOff = yield* HandOff.client
    return handlers
      .handleRaw("handoffLink", ({ params }) =>
        Effect.gen(function*() {
          const answer = yield* handoffs.openLink(params.handle)
          switch (answer._tag) {
            case "Unknown":
              return refusedPage("unknown_handoff")
            case "Refused":
              return answer.returnTo === null
                ? refusedPage(answer.reason)
                : redirectTo(returnLocation(answer.returnTo, { handoffId: answer.handoffId, status: "failed", reason: answer.reason }))
            case "Start":
              return answer.immediate ? redirectTo(answer.startUrl) : continueCard(answer.provider, answer.startUrl)
          }
        }))
      .handleRaw("providerCallback", ({ params, request }) =>
        Effect.gen(function*() {
          const query = new URL(request.url, "http://svc.invalid").searchParams
          const state = query.get("state") ?? ""
          if (!isProviderKind(params.provider) || state === "") return refusedPage("unknown_handoff")
          const found = yield* handoffs.locate(params.provider, state)
          if (Option.isNone(found)) return refusedPage("unknown_handoff")
          const outcome = yield* routeProfileCall(
            makeHandOff(found.value.id).Consent({ code: query.get("code"), error: query.get("error") }),
            "handoff_consent_timeout"
          )
          return outcome.returnUrl === null
            ? outcomePage(outcome)
            : redirectTo(returnLocation(outcome.returnUrl, outcome))
        }))
  })).pipe(Layer.provide(Handoffs.layer))

export const HooksHandlers = HttpApiBuilder.group(publicGroupApi(HooksApi), "hooks", (handlers) =>
  Effect.gen(function*() {
    const hooks = yield* ProviderHooks
    return handlers.handleRaw("providerHook", ({ params, request }) =>
      Effect.gen(function*() {
        const raw = yield* Effect.orDie(request.text)
        const result = yield* hooks.receive(params.provider, request.headers, raw)
        return { received: true as const, fresh: result.fresh }
      }))
  })).pipe(Layer.provide(ProviderHooks.layer))
