import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../../kernel/principal.ts"
import { ProfileAccess } from "../../../kernel/access.ts"
import { TrackingDiagnostics } from "../diagnostics/service.ts"
import { TrackingDomains } from "../domains/service.ts"
import { TrackingInstallers } from "../installers/service.ts"
import { groupApi } from "../../../http/group-api.ts"
import { TrackingSetupApi } from "./api.ts"

/** Installers, custom domains, install verification and diagnostics (decision 0034). */
export const TrackingSetupHandlers = HttpApiBuilder.group(groupApi(TrackingSetupApi), "trackingSetup", (handlers) =>
  Effect.gen(function*() {
    const installers = yield* TrackingInstallers
    const domains = yield* TrackingDomains
    const diagnostics = yield* TrackingDiagnostics
    const access = yield* ProfileAccess
    return handlers.handleAll({
      tagManagerInstaller: ({ query }) => Effect.flatMap(access.current, (profile) => installers.tagManager(profile, query.key)),
      commercePixelInstaller: ({ query }) =>
        Effect.flatMap(access.current, (profile) => installers.commercePixel(profile, query.key)),
      listCustomDomains: () =>
        Effect.map(Effect.flatMap(access.current, domains.list), (data) => ({
          data,
          pagination: { has_next: false, cursor: null }
        })),
      registerCustomDomain: ({ payload }) =>
        Effect.gen(function*() {
          const { domain, created } = yield* domains.register(yield* Principal, yield* access.current, payload.hostname)
          // The flag picks the answer's status: 201 when this call registered the hostname, 200 otherwise.
          return created ? { data: domain, meta: { created: true as const } } : { data: domain, meta: { created: false as const } }
        }),
      removeCustomDomain: ({ params }) =>
        Effect.gen(function*() {
          const removed = yield* domains.remove(yield* Principal, yield* access.current, params.id)
          return { data: { ...removed, removed: true as const } }
        }),
      verifyCustomDomain: ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* domains.verify(yield* Principal, yield* access.current, params.id) }
        }),
      getInstallVerification: () =>
        Effect.map(Effect.flatMap(access.current, diagnostics.latestVerification), (data) => ({ data })),
      startInstallVerification: () =>
        Effect.gen(function*() {
          return { data: yield* diagnostics.startVerification(yield* Principal, yield* access.current) }
        }),
      listTrackedEvents: ({ query }) =>
        Effect.flatMap(access.current, (profile) => diagnostics.events(profile, { limit: query.limit, cursor: query.cursor })),
      getTrackingOps: () => Effect.map(Effect.flatMap(access.current, diagnostics.ops), (data) => ({ data })),
      getTrackingOrigin: () => Effect.map(Effect.flatMap(access.current, diagnostics.origin), (data) => ({ data })),
      getTrackingQuality: ({ query }) =>
        Effect.map(Effect.flatMap(access.current, (profile) => diagnostics.quality(profile, query.days)), (data) => ({ data }))
    })
  })).pipe(Layer.provide([TrackingDiagnostics.layer, TrackingDomains.layer, TrackingInstallers.layer, ProfileAccess.layer]))
