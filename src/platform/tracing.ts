/**
 * W3C trace context (decision 0083): `traceparent` and `tracestate` read from an incoming
 * request or a queued row, written onto outgoing calls and queued rows, and the span helpers
 * that continue or link a trace: the HTTP server span named `{method} {route}`, the span of
 * a background job linked to the trace that queued it.
 */
import { makeExternalSpan } from "@effect/opentelemetry/OtelTracer"
import { Context, Effect, Option, Tracer } from "effect"

/** The `tracestate` of the trace being served; empty when the caller sent none. Carried to outgoing calls and queued work. */
export const CurrentTraceState = Context.Reference<string>("svc/CurrentTraceState", { defaultValue: () => "" })

export interface TraceContext {
  readonly traceparent: string
  /** Empty when none. */
  readonly tracestate: string
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
// W3C caps a tracestate at 32 members; 512 characters is what a vendor must at least propagate.
const TRACESTATE_MAX = 512
const TRACESTATE = /^[\x20-\x7e]*$/

/** The `tracestate` worth keeping: at most 512 printable characters, else dropped (W3C lets a receiver discard it). */
export const cleanTracestate = (raw: string | undefined): string => {
  if (raw === undefined) return ""
  const trimmed = raw.trim()
  return trimmed.length <= TRACESTATE_MAX && TRACESTATE.test(trimmed) ? trimmed : ""
}

/** A remote parent from W3C headers, with its flags and `tracestate` kept so child spans and exports carry them. */
export const parentFromW3c = (traceparent: string | undefined, tracestate?: string | undefined): Option.Option<Tracer.ExternalSpan> => {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim().toLowerCase())
  if (match === null) return Option.none()
  const [, traceId, spanId, flags] = match
  if (traceId === undefined || spanId === undefined || flags === undefined) return Option.none()
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return Option.none()
  const state = cleanTracestate(tracestate)
  return Option.some(makeExternalSpan({
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16),
    traceState: state === "" ? undefined : state
  }))
}

/** The innermost span that is really recorded (spans made while tracing is off carry placeholder ids). */
const recorded = (span: Tracer.AnySpan | undefined): Tracer.AnySpan | undefined => {
  let current = span
  while (current !== undefined && Context.get(current.annotations, Tracer.DisablePropagation)) {
    current = current._tag === "Span" ? Option.getOrUndefined(current.parent) : undefined
  }
  return current
}

const format = (span: Tracer.AnySpan) => `00-${span.traceId.padStart(32, "0")}-${span.spanId}-${span.sampled ? "01" : "00"}`

/**
 * The current trace context, to store with a queued row or send on an outgoing call; none
 * outside a recorded span (tracing off, or no request), so nothing is stored then.
 */
export const currentTraceContext: Effect.Effect<Option.Option<TraceContext>> = Effect.withFiber((fiber) => {
  const span = recorded(Context.getOrUndefined(fiber.context, Tracer.ParentSpan))
  return Effect.succeed(
    span === undefined
      ? Option.none()
      : Option.some({ traceparent: format(span), tracestate: fiber.getRef(CurrentTraceState) })
  )
})

/** Outgoing headers for the current trace: `traceparent` and, when the caller sent one, `tracestate`. */
export const traceHeaders: Effect.Effect<Record<string, string>> = Effect.map(currentTraceContext, (context) =>
  Option.match(context, {
    onNone: () => ({}),
    onSome: ({ traceparent, tracestate }) => tracestate === "" ? { traceparent } : { traceparent, tracestate }
  }))

/**
 * Runs `effect` as the span of a background job (a replay, an outbox row, a sync job...)
 * linked to the trace that queued it: its own trace (the job may run long after the request,
 * batched with others' work), with a link the trace viewer follows back. Messaging semantic
 * conventions: `process {destination}`, kind consumer.
 */
export const withLinkedJobSpan = (
  destination: string,
  queuedBy: { readonly traceparent: string | null; readonly tracestate: string | null },
  attributes: Readonly<Record<string, unknown>> = {}
) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const parent = parentFromW3c(queuedBy.traceparent ?? undefined, queuedBy.tracestate ?? undefined)
  const tracestate = cleanTracestate(queuedBy.tracestate ?? undefined)
  // @effect/opentelemetry builds a link's span context without its trace state: it goes on the
  // link as an attribute instead, and on to the job's own outgoing calls.
  const linkAttributes = tracestate === "" ? { "svc.link": "queued_by" } : { "svc.link": "queued_by", "w3c.tracestate": tracestate }
  return effect.pipe(
    Effect.provideService(CurrentTraceState, tracestate),
    Effect.withSpan(`process ${destination}`, {
      kind: "consumer",
      root: true,
      links: Option.match(parent, {
        onNone: () => [],
        onSome: (span) => [{ span, attributes: linkAttributes }]
      }),
      attributes: {
        "messaging.system": "postgresql",
        "messaging.operation.type": "process",
        "messaging.destination.name": destination,
        ...attributes
      }
      // A job's call site is always this wrapper: capturing it cost a stack trace per job (4 % of the webhook worker's CPU).
    }, { captureStackTrace: false })
  )
}

/**
 * Whether this process records spans: without an exporter the tracer hands out placeholders
 * (decision 0101), which propagate nothing. Asked once by a worker whose hot loop would otherwise
 * open spans per item for nothing (the webhook attempt's two cost a quarter of its deliveries a
 * second). The probe span is never ended, so nothing is exported for it.
 */
export const spansRecorded: Effect.Effect<boolean> = Effect.gen(function*() {
  const tracer = yield* Tracer.Tracer
  const probe = tracer.span({
    name: "svc.probe",
    parent: Option.none(),
    annotations: Context.empty(),
    links: [],
    startTime: 0n,
    kind: "internal",
    root: true,
    sampled: true
  })
  return recorded(probe) !== undefined
})

/** What a middleware knows of the request when it opens the server span. */
export interface ServerRequestFacts {
  readonly method: string
  readonly headers: Readonly<Record<string, string | undefined>>
}

/**
 * The server span of a request (HTTP semantic conventions), continuing the caller's
 * `traceparent` with its `tracestate`. Named `{method}` until the route is known; `nameRoute`
 * renames it `{method} {route}` (the router matches after the span starts).
 */
export const withServerSpan = (request: ServerRequestFacts) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const tracestate = cleanTracestate(request.headers["tracestate"])
  const parent = parentFromW3c(request.headers["traceparent"], tracestate)
  return effect.pipe(
    Effect.provideService(CurrentTraceState, Option.isSome(parent) ? tracestate : ""),
    Effect.withSpan(request.method, {
      kind: "server",
      ...(Option.isSome(parent) ? { parent: parent.value } : { root: true }),
      attributes: { "http.request.method": request.method }
    }, { captureStackTrace: false }) // always this line: a stack captured per request says nothing (2 % of ingest's CPU)
  )
}

/**
 * Renames a span once its route is known. Effect spans have fixed names; the OpenTelemetry
 * span beneath one (when the SDK tracer is installed) can still be renamed before it ends.
 */
export const renameSpan = (span: Tracer.AnySpan, name: string): void => {
  if (span._tag !== "Span" || span.status._tag === "Ended" || !("span" in span)) return
  const otel: unknown = span.span
  if (typeof otel === "object" && otel !== null && "updateName" in otel && typeof otel.updateName === "function") {
    otel.updateName(name)
  }
}

/** What the server span records once the response is known. */
export interface ServedRequestFacts extends ServerRequestFacts {
  readonly url: string
  readonly remoteAddress: Option.Option<string>
}

/**
 * Completes the request's server span (ours or the platform's) with the HTTP semantic
 * conventions' attributes and its `{method} {route}` name. Unrouted requests keep `{method}`.
 */
export const finishServerSpan = (request: ServedRequestFacts, route: string | undefined, status: number): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    let span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    while (span !== undefined && span._tag === "Span" && span.kind !== "server") span = Option.getOrUndefined(span.parent)
    if (span === undefined || span._tag !== "Span" || !span.sampled) return Effect.void
    const query = request.url.indexOf("?")
    span.attribute("url.path", query === -1 ? request.url : request.url.slice(0, query))
    span.attribute("http.response.status_code", status)
    const host = request.headers["host"]
    if (host !== undefined) {
      const colon = host.lastIndexOf(":")
      const port = colon > 0 && !host.endsWith("]") ? Number(host.slice(colon + 1)) : Number.NaN
      span.attribute("server.address", Number.isInteger(port) ? host.slice(0, colon) : host)
      if (Number.isInteger(port)) span.attribute("server.port", port)
    }
    const agent = request.headers["user-agent"]
    if (agent !== undefined) span.attribute("user_agent.original", agent)
    if (Option.isSome(request.remoteAddress)) span.attribute("client.address", request.remoteAddress.value)
    if (status >= 500) span.attribute("error.type", String(status))
    if (route !== undefined) {
      span.attribute("http.route", route)
      renameSpan(span, `${request.method} ${route}`)
    }
    return Effect.void
  })

/**
 * The RPC server's span options (RPC semantic conventions): spans `{service}.{method}` with
 * `rpc.system`, `rpc.service` and `rpc.method` (Effect RPC adds the method). For every
 * `RpcServer.layer*` of this service.
 */
export const rpcServerSpans = (service: string) => ({
  spanPrefix: service,
  spanAttributes: { "rpc.system": "effect_rpc", "rpc.service": service }
})
