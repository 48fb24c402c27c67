/**
 * Logs: one JSON object per line on stdout (or pretty lines for a terminal), filtered by
 * `LOG_LEVEL`. A JSON line carries the `request_id` of the request it was written for, its
 * annotations at the top level, and the `trace_id` / `span_id` of the span it was written in.
 */
import { Context, Formatter, Layer, Logger, References, Tracer } from "effect"
import { AppConfig } from "./config.ts"
import { CurrentRequestId } from "./request-id.ts"

/** The span to name in a log line: the innermost one that is really recorded. */
const recordedSpan = (span: Tracer.AnySpan | undefined): Tracer.AnySpan | undefined => {
  let current = span
  // Spans created while tracing is off (or with propagation disabled) carry placeholder ids.
  while (current !== undefined && Context.get(current.annotations, Tracer.DisablePropagation)) {
    current = current._tag === "Span" && current.parent._tag === "Some" ? current.parent.value : undefined
  }
  return current
}

/**
 * `message` is always a string, so a log pipeline can index it as text: the string parts of a
 * multi-part log joined by spaces; the other parts (an error object, a record) go to `details`,
 * and make the message themselves, as JSON, when there is no string part.
 */
const messageFields = (message: unknown): { readonly message: string; readonly details?: unknown } => {
  if (typeof message === "string") return { message }
  const parts = Array.isArray(message) ? message : [message]
  const texts = parts.filter((part): part is string => typeof part === "string")
  const others = parts.filter((part) => typeof part !== "string")
  const details = others.length === 1 ? others[0] : others
  if (others.length === 0) return { message: texts.join(" ") }
  return { message: texts.length > 0 ? texts.join(" ") : JSON.stringify(details) ?? String(details), details }
}

/** A JSON log line: `timestamp`, `level`, `message` (a string), `details`, annotations, `trace_id`, `span_id`, `cause`. */
export const jsonLogger: Logger.Logger<unknown, string> = Logger.make((options) => {
  const structured = Logger.formatStructured.log(options)
  const span = recordedSpan(Context.getOrUndefined(options.fiber.context, Tracer.ParentSpan))
  const requestId = options.fiber.getRef(CurrentRequestId)
  return Formatter.formatJson({
    timestamp: structured.timestamp,
    level: structured.level,
    ...messageFields(structured.message),
    ...(requestId === "" ? {} : { request_id: requestId }),
    ...structured.annotations,
    ...(span === undefined ? {} : { trace_id: span.traceId, span_id: span.spanId }),
    ...(structured.cause === undefined ? {} : { cause: structured.cause }),
    fiber_id: structured.fiberId
  })
})

/** The loggers for a format; `tracerLogger` also records each log as an event on the current span. */
export const loggersFor = (format: "json" | "pretty") =>
  [format === "json" ? Logger.withConsoleLog(jsonLogger) : Logger.consolePretty(), Logger.tracerLogger] as const

export const LoggingLayer: Layer.Layer<never, never, AppConfig> = Layer.unwrap(
  AppConfig.useSync((settings) =>
    Layer.merge(
      Logger.layer(loggersFor(settings.logFormat)),
      Layer.succeed(References.MinimumLogLevel)(settings.logLevel)
    )
  )
)
