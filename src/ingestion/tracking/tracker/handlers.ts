import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { PayloadTooLarge } from "../../../../schema/errors.ts"
import { peerAddressOf } from "../../../platform/request-info.ts"
import { sha256 } from "../../../platform/json.ts"
import { Principal } from "../../../kernel/principal.ts"
import { ProfileAccess } from "../../../kernel/access.ts"
import { MAX_EVENT_BYTES, TrackingService } from "./service.ts"
import { groupApi, publicGroupApi } from "../../../http/group-api.ts"
import { TrackingApi, CollectorApi } from "./api.ts"

export const TrackingHandlers = HttpApiBuilder.group(groupApi(TrackingApi), "tracking", (handlers) =>
  Effect.gen(function*() {
    const tracking = yield* TrackingService
    const access = yield* ProfileAccess
    return handlers.handleAll({
      createTrackingKey: () =>
        Effect.gen(function*() {
          const { key, created } = yield* tracking.createKey(yield* Principal, yield* access.current)
          // The flag picks the answer's status: 201 when this call minted the key, 200 otherwise.
          return created ? { data: key, meta: { created: true as const } } : { data: key, meta: { created: false as const } }
        }),
      listTrackingKeys: () =>
        Effect.gen(function*() {
          const keys = yield* tracking.listKeys(yield* access.current)
          return { data: keys, pagination: { has_next: false, cursor: null } }
        }),
      revokeTrackingKey: ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* tracking.revokeKey(yield* Principal, yield* access.current, params.id) }
        }),
      getTrackingSettings: () => Effect.map(Effect.flatMap(access.current, tracking.settings), (data) => ({ data })),
      updateTrackingSettings: ({ payload }) =>
        Effect.gen(function*() {
          const change = yield* tracking.updateSettings(yield* Principal, yield* access.current, payload)
          return { data: change.settings, meta: { replay_job_id: change.replayJobId, changed: change.changed } }
        }),
      getTrackingSnippet: ({ query }) =>
        Effect.flatMap(access.current, (profile) =>
          tracking.snippet(profile, { key: query.key, bundle: query.bundle, pixelId: query.pixel_id }))
    })
  })).pipe(Layer.provide([TrackingService.layer, ProfileAccess.layer]))

const CORS_ALLOW = {
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-allow-headers": "content-type",
  "access-control-max-age": "86400"
} as const

/**
 * The collector reads its body itself: `text/plain` (sendBeacon) and JSON alike, 16 KB at
 * most, and a malformed event answers the envelope's `validation_error` naming the field.
 */
export const CollectorHandlers = HttpApiBuilder.group(publicGroupApi(CollectorApi), "collector", (handlers) =>
  Effect.gen(function*() {
    const tracking = yield* TrackingService
    return handlers
      .handleRaw("collect", ({ request }) =>
        Effect.gen(function*() {
          if (Number(request.headers["content-length"] ?? "0") > MAX_EVENT_BYTES) {
            return yield* new PayloadTooLarge({ message: `A tracker event is at most ${MAX_EVENT_BYTES} bytes.` })
          }
          // A body over the server's cap fails while reading; the envelope answers 413 for it.
          const body = new Uint8Array(yield* Effect.orDie(request.arrayBuffer))
          const outcome = yield* tracking.collect({ body, headers: request.headers, peerAddress: peerAddressOf(request) })
          return HttpServerResponse.empty({
            status: 204,
            headers: outcome.allowOrigin === null
              ? {}
              : { "access-control-allow-origin": outcome.allowOrigin, vary: "Origin" }
          })
        }))
      .handleRaw("trackerScript", ({ query, request }) =>
        Effect.gen(function*() {
          const script = yield* tracking.publicScript({ key: query.key, bundle: query.bundle, pixelId: query.pixel_id })
          const etag = `"${sha256(script).slice(0, 32)}"`
          const headers = {
            etag,
            "cache-control": "public, max-age=300",
            "x-content-type-options": "nosniff"
          }
          if (request.headers["if-none-match"] === etag) return HttpServerResponse.empty({ status: 304, headers })
          return HttpServerResponse.text(script, { contentType: "application/javascript; charset=utf-8", headers })
        }))
      .handleRaw("collectPreflight", ({ request }) =>
        Effect.gen(function*() {
          const key = new URL(request.url, "http://svc.invalid").searchParams.get("key") ?? undefined
          const origin = yield* tracking.preflight(request.headers["origin"], key)
          return HttpServerResponse.empty({
            status: 204,
            headers: { ...CORS_ALLOW, "access-control-allow-origin": origin, vary: "Origin" }
          })
        }))
  })).pipe(Layer.provide([TrackingService.layer, ProfileAccess.layer]))
