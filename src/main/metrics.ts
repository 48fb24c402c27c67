/**
 * The series a scraper should see from start-up, before any traffic (Prometheus practice: a
 * known series is exported at zero, so `rate()` counts its first increase and an alert on it has
 * something to read). Only bounded label sets: the routes whose contract lists a 429, the group
 * commit's two outcomes, the unlabelled batch size, the request log's drops and singleton count. Families whose labels come
 * with traffic (routes by status, providers, statements) are declared by the scrape itself
 * (`completeExposition`, src/platform/metrics.ts).
 */
import { Effect, Layer, Metric } from "effect"
import { ClusterMetrics } from "effect/cluster"
import { HttpApi } from "effect/http-api"
import { rateLimitRejections, recorderBatchSize, recorderCommitDuration, requestLogDropped } from "../platform/metrics.ts"
import { Api } from "./api.ts"

/** The route templates whose contract answers 429 (`rate_limit_exceeded`), as the edge labels them. */
export const rateLimitedRoutes = (): ReadonlyArray<string> => {
  const routes = new Set<string>()
  HttpApi.reflect(Api, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint, errors }) => {
      if (errors.has(429)) routes.add(endpoint.path)
    }
  })
  return [...routes].sort()
}

/** Registers each series at its zero (reading a series registers it; an existing one is left as it is). */
export const MetricsAtStartLayer = Layer.effectDiscard(Effect.all([
  ...rateLimitedRoutes().map((route) => Metric.value(Metric.withAttributes(rateLimitRejections, { "http.route": route }))),
  Metric.value(recorderBatchSize),
  Metric.value(requestLogDropped),
  ...["committed", "failed"].map((outcome) => Metric.value(Metric.withAttributes(recorderCommitDuration, { "svc.outcome": outcome }))),
  Metric.value(ClusterMetrics.singletons)
], { discard: true }))
