import { Clock, Effect, Layer } from "effect"
import { HttpEffect, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { FeatureRetired, NotFound } from "../../../schema/errors.ts"
import { deprecationHeader, findDeprecation, isPastSunset, sunsetHeader } from "./deprecations.ts"

/**
 * Applies the deprecation table to every operation: headers while deprecated,
 * 410 `feature_retired` while retired, 404 `not_found` once the sunset has passed.
 * Decided by the Effect clock, so tests move time with a TestClock.
 */
export class Deprecation extends HttpApiMiddleware.Service<Deprecation>()("svc/Deprecation", {
  error: [FeatureRetired.wire, NotFound.wire]
}) {}

export const DeprecationLayer = Layer.succeed(Deprecation)((httpEffect, { endpoint }) => {
  const entry = findDeprecation(endpoint.method, endpoint.path)
  if (entry === undefined) return httpEffect
  const headers: Record<string, string> = {
    deprecation: deprecationHeader(entry),
    sunset: sunsetHeader(entry),
    ...(entry.successor === null ? {} : { link: `<${entry.successor}>; rel="successor-version"` })
  }
  return Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (isPastSunset(entry, now)) {
      return yield* new NotFound({ message: "No such resource or route." })
    }
    yield* HttpEffect.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeaders(response, headers))
    )
    if (entry.retired) {
      return yield* new FeatureRetired({
        message: `${entry.method} ${entry.path} is retired and will be removed on ${entry.sunset}.`
      })
    }
    return yield* httpEffect
  })
})
