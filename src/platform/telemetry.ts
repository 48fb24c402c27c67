/**
 * Tracing. With `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans go to `${endpoint}/v1/traces` over
 * OTLP/HTTP through a batching processor. Without it spans are placeholders that record and
 * export nothing; only the SQL client's statement spans feed the database metrics (decision 0101).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor
} from "@opentelemetry/sdk-trace-base"
import { Context, Effect, Layer, Option, Tracer } from "effect"
import { FetchHttpClient, HttpMiddleware } from "effect/http"
import { OtlpExporter, OtlpMetrics, OtlpSerialization } from "effect/observability"
import { AppConfig, type AppSettings } from "./config.ts"
import { dbMetricsTracer } from "./db-metrics.ts"
import { VERSION } from "./version.ts"

/**
 * Parses the OpenTelemetry `key=value,key2=value2` list format (used by
 * `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`): entries are trimmed and
 * percent-decoded; entries without `=`, with an empty key or with bad encoding are skipped.
 */
export const parseKeyValueList = (input: string): Record<string, string> => {
  const result: Record<string, string> = {}
  for (const entry of input.split(",")) {
    const separator = entry.indexOf("=")
    if (separator <= 0) continue
    const key = decodeComponent(entry.slice(0, separator).trim())
    const value = decodeComponent(entry.slice(separator + 1).trim())
    if (key === undefined || key === "" || value === undefined) continue
    result[key] = value
  }
  return result
}

const decodeComponent = (raw: string): string | undefined => {
  try {
    return decodeURIComponent(raw)
  } catch {
    return undefined
  }
}

/** The resource every span carries: service name and version plus `OTEL_RESOURCE_ATTRIBUTES`. */
export const resourceConfig = (settings: AppSettings) => ({
  serviceName: settings.otel.serviceName,
  serviceVersion: VERSION,
  attributes: parseKeyValueList(settings.otel.resourceAttributes)
})

/**
 * The SDK tracer. The platform's own HTTP server span is switched off: the envelope middleware
 * opens one that keeps the caller's `tracestate` and is named `{method} {route}` (decision 0083).
 */
const tracing = (settings: AppSettings, spanProcessor: SpanProcessor): Layer.Layer<never> =>
  Layer.merge(
    meteredTracer.pipe(
      Layer.provide(NodeSdk.layer(() => ({ spanProcessor, resource: resourceConfig(settings), shutdownTimeout: "5 seconds" })))
    ),
    Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)
  )

/** The tracer in place (the SDK's, or none) wrapped to feed the database metrics from statement spans (decision 0101). */
const meteredTracer: Layer.Layer<never> = Layer.effect(Tracer.Tracer)(
  Effect.gen(function*() {
    const inner = yield* Tracer.Tracer
    const context = yield* Effect.context<never>()
    return dbMetricsTracer(context, inner === Tracer.nativeTracer ? undefined : inner)
  })
)

/** Metrics pushed to `${endpoint}/v1/metrics` every 15 s (and at shutdown), cumulative as Prometheus reads them (decision 0084). */
const otlpMetrics = (settings: AppSettings, endpoint: string): Layer.Layer<never> =>
  Layer.effectDiscard(OtlpMetrics.make({
    url: `${endpoint}/v1/metrics`,
    resource: resourceConfig(settings),
    headers: parseKeyValueList(settings.otel.headers),
    exportInterval: "15 seconds",
    shutdownTimeout: "5 seconds"
  })).pipe(Layer.provide([FetchHttpClient.layer, OtlpSerialization.layerJson, OtlpExporter.layerFlusher]))

/**
 * No exporter: spans are placeholders (no ids, nothing recorded, nothing propagated); the
 * statement spans among them still time the database metrics. The server span is the
 * envelope's, as with the SDK, so requests take one path either way.
 */
export const TracingDisabled: Layer.Layer<never> = Layer.merge(
  meteredTracer,
  Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)
)

/** OTLP/HTTP exporter when an endpoint is configured, tracing switched off otherwise. */
export const TelemetryLayer: Layer.Layer<never, never, AppConfig> = Layer.unwrap(
  AppConfig.useSync((settings) =>
    Option.match(settings.otel.endpoint, {
      onNone: () => TracingDisabled,
      onSome: (endpoint) =>
        Layer.merge(
          tracing(
            settings,
            new BatchSpanProcessor(
              new OTLPTraceExporter({
                url: `${endpoint}/v1/traces`,
                headers: parseKeyValueList(settings.otel.headers)
              })
            )
          ),
          otlpMetrics(settings, endpoint)
        )
    })
  )
)

/** For tests: every span is handed to `exporter` as soon as it ends (e.g. an `InMemorySpanExporter`). */
export const TelemetryTest = (exporter: SpanExporter): Layer.Layer<never, never, AppConfig> =>
  Layer.unwrap(AppConfig.useSync((settings) => tracing(settings, new SimpleSpanProcessor(exporter))))

/**
 * Sets attributes on the request's server span from anywhere beneath it (inside nested
 * spans, where `Effect.annotateCurrentSpan` would name the inner span). No-op outside a request.
 */
export const annotateRequestSpan = (attributes: Readonly<Record<string, unknown>>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    let span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    while (span !== undefined && span._tag === "Span") {
      if (span.kind === "server") {
        for (const key in attributes) span.attribute(key, attributes[key])
        break
      }
      span = Option.getOrUndefined(span.parent)
    }
    return Effect.void
  })
