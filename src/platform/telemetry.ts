/**
 * Tracing. With `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans go to `${endpoint}/v1/traces` over
 * OTLP/HTTP through a batching processor. Without it no tracer is installed and span
 * creation is switched off, so the request path pays nothing for tracing.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor
} from "@opentelemetry/sdk-trace-base"
import { Context, Effect, Layer, Option, References, Tracer } from "effect"
import { FetchHttpClient, HttpMiddleware } from "effect/http"
import { OtlpExporter, OtlpMetrics, OtlpSerialization } from "effect/observability"
import { AppConfig, type AppSettings } from "./config.ts"
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
    NodeSdk.layer(() => ({ spanProcessor, resource: resourceConfig(settings), shutdownTimeout: "5 seconds" })),
    Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)
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

/** No exporter: spans are not even created (they would go nowhere). */
export const TracingDisabled: Layer.Layer<never> = Layer.succeed(References.TracerEnabled)(false)

/** OTLP/HTTP exporter when an endpoint is configured, tracing switched off otherwise. */
export const TelemetryLive: Layer.Layer<never, never, AppConfig> = Layer.unwrap(
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
