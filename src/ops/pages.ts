/**
 * `GET /metrics`: the process's metrics in Prometheus text format (decision 0084), behind the
 * operator credential (`Authorization: Bearer <SVC_ADMIN_TOKEN>`) as the other operator views
 * are. A plain router route, not part of the public API or its OpenAPI document: it is for
 * the operator's scraper, and its series change with the code.
 */
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { Unauthorized } from "../../schema/errors.ts"
import { AppConfig } from "../platform/config.ts"
import { BACKLOG_LEADERS, backlogExposition, completeExposition } from "../platform/metrics.ts"
import { ExportDestinations } from "../exports/destinations/service.ts"
import { WebhookSubscriptions } from "../webhooks/subscriptions/service.ts"
import { secretMatches } from "../platform/secrets.ts"

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** The Prometheus 0.0.4 text exposition format. */
const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** A 401 in the error envelope (the envelope middleware adds the request id). */
const unauthorized = (message: string, reason?: string) =>
  HttpServerResponse.jsonUnsafe(
    { error: { code: Unauthorized.code, message, status: Unauthorized.status, ...(reason === undefined ? {} : { reason }) } },
    { status: Unauthorized.status, headers: { "www-authenticate": "Bearer" } }
  )

export const MetricsRoute = Layer.unwrap(Effect.gen(function*() {
  const settings = yield* AppConfig
  const subscriptions = yield* WebhookSubscriptions
  const destinations = yield* ExportDestinations
  // The backlog leaders, read at the scrape (decision 0120); a slow or absent database leaves them out, not the scrape.
  const leaders = Effect.all([subscriptions.backlogLeaders(BACKLOG_LEADERS), destinations.backlogLeaders(BACKLOG_LEADERS)], { concurrency: 2 }).pipe(
    Effect.timeoutOrElse({ duration: "2 seconds", orElse: () => Effect.succeed([[], []] as const) }),
    Effect.catchTag("DatabaseUnavailable", () => Effect.succeed([[], []] as const)),
    Effect.map(([webhooks, exports]) => backlogExposition(webhooks, exports)),
    Effect.withTracerEnabled(false)
  )
  return HttpRouter.add(
    "GET",
    "/metrics",
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (Option.isNone(settings.adminToken)) {
        return unauthorized(
          "Metrics are served to the operator: set SVC_ADMIN_TOKEN and send it as `Authorization: Bearer <SVC_ADMIN_TOKEN>`.",
          "operator_access_off"
        )
      }
      const match = BEARER.exec(request.headers["authorization"] ?? "")
      if (match === null || !secretMatches(match[1] ?? "", settings.adminToken.value)) {
        return unauthorized("Missing, invalid, expired or revoked credential.")
      }
      // Every known family with HELP and TYPE, series or not yet (decision 0084).
      const body = completeExposition(`${yield* PrometheusMetrics.format()}\n${yield* leaders}`)
      return HttpServerResponse.text(body, { contentType: CONTENT_TYPE, headers: { "cache-control": "no-store" } })
    })
  )
})).pipe(Layer.provide([WebhookSubscriptions.layer, ExportDestinations.layer]))
