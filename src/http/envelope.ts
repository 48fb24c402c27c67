/**
 * The one place that knows the request: it gives every request an id, renders every
 * failure as the specification's envelope and stamps `X-Request-Id` on every response.
 *
 * Errors reach it three ways: encoded by HttpApi from a handler's typed error (the body is
 * already an envelope and only lacks the request-scoped fields), as bare framework answers
 * (an unknown route, an unsupported content type, a body over the cap), or as defects.
 */
import { Cause, Context, Effect, type Fiber, Layer, LogLevel, Metric, Option, References, Tracer } from "effect"
import { HttpMiddleware, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import { isSqlError } from "effect/sql/SqlError"
import type { unhandled } from "effect/Types"
import {
  type ApiError,
  type ErrorEnvelope,
  InternalError,
  NotFound,
  envelopeBody,
  PayloadTooLarge,
  toEnvelope,
  ValidationError
} from "../../schema/errors.ts"
import { MAX_LOGGED_PATH, RequestLogSink } from "../kernel/request-log.ts"
import { AppConfig } from "../platform/config.ts"
import { stoppedBeforeFinishing } from "../platform/lifecycle.ts"
import { CurrentRequestAccess, CurrentRequestId, newRequestId, type RequestAccess } from "../platform/request-id.ts"
import { databaseUnavailable, isConnectionFailure } from "../platform/database.ts"
import { httpServerDuration, observe, rateLimitRejections } from "../platform/metrics.ts"
import { finishServerSpan, withServerSpan } from "../platform/tracing.ts"
import { requestSchemaError } from "./schema-errors.ts"
import { unstorableInBody, unstorableInUrl, unstorableRefusal } from "./unstorable-input.ts"

const incomingIdPattern = /^[A-Za-z0-9._:-]{8,128}$/

/** Honour a well-formed incoming `X-Request-Id` (so a caller can correlate), otherwise mint one. */
export const requestIdFor = (request: HttpServerRequest.HttpServerRequest): string => {
  const incoming = request.headers["x-request-id"]
  return incoming !== undefined && incomingIdPattern.test(incoming)
    ? incoming
    : newRequestId()
}

export interface RenderContext {
  readonly requestId: string
  readonly docsBaseUrl: string
  readonly maxBodyBytes: number
}

/** Fills the request-scoped fields of an envelope and builds the response, `Retry-After` included. */
export const envelopeResponse = (envelope: ErrorEnvelope, context: RenderContext): HttpServerResponse.HttpServerResponse => {
  const body = envelopeBody(envelope, context.requestId, context.docsBaseUrl)
  const headers: Record<string, string> = { "x-request-id": context.requestId }
  if (body.error.retry_after_seconds !== undefined) headers["retry-after"] = String(body.error.retry_after_seconds)
  return HttpServerResponse.jsonUnsafe(body, { status: body.error.status, headers })
}

export const errorResponse = (error: ApiError, context: RenderContext) =>
  envelopeResponse(toEnvelope(error), context)

const isEnvelope = (u: unknown): u is ErrorEnvelope =>
  typeof u === "object" && u !== null && "error" in u && typeof u.error === "object" && u.error !== null &&
  "code" in u.error && typeof u.error.code === "string"

const decoder = new TextDecoder()

/** A response with status >= 400 that HttpApi or the router produced: make it an envelope. */
const finalizeErrorResponse = (
  response: HttpServerResponse.HttpServerResponse,
  context: RenderContext
): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (body._tag === "Uint8Array" && body.contentType.startsWith("application/json")) {
    const parsed: unknown = JSON.parse(decoder.decode(body.body))
    if (isEnvelope(parsed)) {
      const finalized = envelopeResponse(parsed, context)
      return HttpServerResponse.setHeaders(finalized, withoutContentHeaders(response.headers))
    }
    // A JSON error in another agreed format (the OAuth error format of /oauth/*) is final.
    return HttpServerResponse.setHeader(response, "x-request-id", context.requestId)
  }
  // An HTML page is a browser's answer (the OAuth consent screens' error pages): final too.
  if (body._tag === "Uint8Array" && body.contentType.startsWith("text/html")) {
    return HttpServerResponse.setHeader(response, "x-request-id", context.requestId)
  }
  if (response.status === 404) return envelopeResponse(notFoundEnvelope, context)
  return errorResponse(bareStatusError(response, context), context)
}

const withoutContentHeaders = (headers: Record<string, string>) => {
  const { "content-type": _type, "content-length": _length, ...rest } = headers
  return rest
}

const notFoundEnvelope = toEnvelope(new NotFound({ message: "No such resource or route." }))

/** Unknown routes and unserved methods: the 404 envelope, without building an error per request. */
export const NotFoundRoute = HttpRouter.addAll(
  (["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const).map((method) =>
    HttpRouter.route(method, "*", Effect.succeed(HttpServerResponse.empty({ status: 404 })))
  )
)

/** Errors for the framework's own bare answers. */
const bareStatusError = (response: HttpServerResponse.HttpServerResponse, context: RenderContext): ApiError => {
  switch (response.status) {
    case 400:
      return new ValidationError({ message: "The request could not be parsed." })
    // 404 never gets here: finalizeErrorResponse answers it with the prebuilt envelope.
    case 405:
      return new NotFound({ message: "No such resource or route." })
    case 413:
      return payloadTooLarge(context)
    case 415:
      return new ValidationError({
        message: "Unsupported Content-Type: send the request body as application/json."
      })
    default:
      return new InternalError({ message: "The server failed to answer this request." })
  }
}

const payloadTooLarge = (context: RenderContext) =>
  new PayloadTooLarge({ message: `The request body is larger than the limit of ${context.maxBodyBytes} bytes.` })

/** Turns a failed request's cause into the error a client sees; logs what it does not recognise. */
const errorFromCause = (cause: Cause.Cause<unknown>, context: RenderContext): Effect.Effect<ApiError> => {
  const failure = Cause.findErrorOption(cause)
  const candidates: Array<unknown> = [
    ...(Option.isSome(failure) ? [failure.value] : []),
    ...cause.reasons.flatMap((reason) => (reason._tag === "Die" ? [reason.defect] : []))
  ]
  for (const candidate of candidates) {
    const known = knownError(candidate, context)
    if (known !== undefined) return Effect.succeed(known)
  }
  // A request is interrupted by the server only when it stops (a client that went away reads
  // nothing): the request did not finish, so the client should retry it elsewhere.
  if (Cause.hasInterruptsOnly(cause)) {
    return Effect.succeed(stoppedBeforeFinishing())
  }
  return Effect.as(
    Effect.logError("unhandled failure while serving a request", cause),
    new InternalError({ message: "Internal server error. Report the request_id to support." })
  )
}

const knownError = (u: unknown, context: RenderContext): ApiError | undefined => {
  if (HttpServerError.isHttpServerError(u)) {
    const reason = u.reason
    if (reason._tag === "RouteNotFound") return new NotFound({ message: "No such resource or route." })
    if (reason._tag === "RequestParseError") {
      return reason.reason === "BodyTooLarge"
        ? payloadTooLarge(context)
        : new ValidationError({ message: "The request body could not be read." })
    }
    return undefined
  }
  // Groups outside the SchemaErrors middleware (OAuth, collector) get the same mapping.
  if (HttpApiSchemaError.is(u)) return requestSchemaError(u)
  // A lost or refused connection is the database's outage; a statement the database refused is
  // a defect (500, logged below), never a 503 that invites retrying bad input forever.
  if (isSqlError(u)) return isConnectionFailure(u) ? databaseUnavailable() : undefined
  if (typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && "message" in u) {
    return isApiError(u) ? u : undefined
  }
  return undefined
}

const isApiError = (u: object): u is ApiError => {
  const ctor = (u as { constructor?: { code?: unknown; status?: unknown } }).constructor
  return typeof ctor?.code === "string" && typeof ctor.status === "number"
}

/**
 * Global router middleware: request id, body cap, envelope rendering, `X-Request-Id`.
 * Runs inside the server span, so it also names the span's request id. (The body cap while
 * reading a body is the platform's `MaxBodySize`, set once for the server in CoreServicesLayer.)
 */
export const EnvelopeMiddleware = HttpRouter.middleware(
  Effect.gen(function*() {
    const settings = yield* AppConfig
    // The request log's sink (decision 0130), where the composition root provides one.
    const sink = Option.getOrUndefined(yield* Effect.serviceOption(RequestLogSink))
    const respond = (httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>): Effect.Effect<HttpServerResponse.HttpServerResponse, unhandled> =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const requestId = requestIdFor(request)
        const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
        if (span !== undefined && span._tag === "Span") span.attribute("svc.request_id", requestId)
        const context: RenderContext = { requestId, docsBaseUrl: settings.baseUrl, maxBodyBytes: settings.maxBodyBytes }
        if (Number(request.headers["content-length"] ?? "0") > settings.maxBodyBytes) {
          return Effect.succeed(errorResponse(payloadTooLarge(context), context))
        }
        // A CORS preflight reads nothing of its URL.
        const urlField = request.method !== "OPTIONS" && readsQuery(request.url) ? unstorableInUrl(request.url) : undefined
        if (urlField !== undefined) return Effect.succeed(refusal(request, urlField, context))
        // The sandbox providers stand in for other companies' servers: their answers keep their own
        // shapes. Not served here (live mode), /sandbox/ is an unknown route like any other.
        const sandbox = settings.providers.servesSandbox && request.url.startsWith("/sandbox/")
        const guarded = hasBody(request) && !sandbox
          ? Effect.flatMap(request.text, (text) => {
            const bodyField = unstorableInBody(text)
            return bodyField === undefined ? httpEffect : Effect.succeed(refusal(request, bodyField, context))
          })
          : httpEffect
        return Effect.matchCauseEffect(Effect.provideService(guarded, CurrentRequestId, requestId), {
          onSuccess: (response) =>
            Effect.succeed(
              response.status >= 400 && !sandbox
                ? finalizeErrorResponse(response, context)
                : HttpServerResponse.setHeader(response, "x-request-id", requestId)
            ),
          onFailure: (cause) =>
            errorFromCause(cause, context).pipe(
              Effect.map((error) => errorResponse(error, context)),
              Effect.provideService(CurrentRequestId, requestId)
            )
        })
      })
    // One access line per request, whatever answered it (decision 0051).
    return (httpEffect): Effect.Effect<HttpServerResponse.HttpServerResponse, unhandled> =>
      Effect.withFiber((fiber) => {
        const access: Access = { started: performance.now(), fiber, route: undefined, principalKind: null, profileId: null, keyId: null }
        const noted = Effect.provideService(noteRoute(httpEffect, access), CurrentRequestAccess, access)
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const served = Effect.tap(respond(noted), (response) => {
          if (sink !== undefined) recordRequest(sink, request, access, response)
          return Effect.all([
            finishServerSpan(request, access.route, response.status),
            measure(request.method, access, response.status),
            logAccess(access, response)
          ], { discard: true })
        })
        // The platform's server span is switched off where telemetry is installed (it cannot carry
        // `tracestate`): this one replaces it (decision 0083); elsewhere the platform's is renamed.
        return fiber.getRef(HttpMiddleware.TracerDisabledWhen)(request) ? withServerSpan(request)(served) : served
      })
  }),
  { global: true }
)

/** The request's duration by method, route and status; every 429 the edge answers (rate limits, throttles) by route. */
const measure = (method: string, access: Access, status: number): Effect.Effect<void> => {
  const route = access.route ?? "(not routed)"
  const duration = observe(httpServerDuration, (performance.now() - access.started) / 1000, {
    "http.request.method": method,
    "http.route": route,
    "http.response.status_code": String(status)
  })
  return status === 429
    ? Effect.andThen(duration, Metric.update(Metric.withAttributes(rateLimitRejections, { "http.route": route }), 1))
    : duration
}

/** What the access line needs beyond the response: set when the request starts, by the auth middleware and when its route ran. */
interface Access extends RequestAccess {
  readonly started: number
  readonly fiber: Fiber.Fiber<unknown, unknown>
  route: string | undefined
}

/**
 * The matched route's template: the router puts it in the fiber's context for the handler, and it is gone once the handler's caller restores that.
 * The catch-all 404 route (`*`) is no route: the span keeps its bare `{method}` name, as the semantic conventions ask.
 */
const noteRoute = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>, access: Access) =>
  Effect.onExit(httpEffect, () => {
    const path = Context.getOrUndefined(access.fiber.context, HttpRouter.RouteContext)?.route.path
    access.route = path === "*" ? undefined : path
    return Effect.void
  })

/**
 * The access line: method, route template (never the URL: it may carry an email), status,
 * duration, principal kind and profile id (null until the auth middleware accepted a credential);
 * the JSON logger adds request and trace ids. One log call, no generator (decision 0027).
 */
const logAccess = (access: Access, response: HttpServerResponse.HttpServerResponse) => {
  // Under LOG_LEVEL=Warn and above the line would be dropped: skip building it.
  if (LogLevel.isGreaterThan(access.fiber.getRef(References.MinimumLogLevel), "Info")) return Effect.void
  const request = Context.getUnsafe(access.fiber.context, HttpServerRequest.HttpServerRequest)
  // Undefined when the edge refused the request before routing (body cap, unstorable input).
  const route = access.route ?? null
  return Effect.logInfo(`${request.method} ${route ?? "(not routed)"} ${response.status}`).pipe(
    Effect.annotateLogs({
      method: request.method,
      route,
      status: response.status,
      duration_ms: Math.round((performance.now() - access.started) * 10) / 10,
      principal_kind: access.principalKind,
      profile_id: access.profileId
    }),
    Effect.provideService(CurrentRequestId, response.headers["x-request-id"] ?? "")
  )
}

/** Reading the request log is not logged: a console polling it would fill it with its own reads. */
const REQUEST_LOG_ROUTE = "/api/v1/request-logs"

/**
 * The request log's entry (decision 0130): profile-grain `/api/v1` calls only (the profile is set
 * once the auth middleware recognised the caller on it; the collector, health and docs have none).
 * The path without its query string, never a body or header; handed over without an effect.
 */
const recordRequest = (
  sink: RequestLogSink["Service"],
  request: HttpServerRequest.HttpServerRequest,
  access: Access,
  response: HttpServerResponse.HttpServerResponse
) => {
  if (access.profileId === null || access.principalKind === null || !request.url.startsWith("/api/v1/")) return
  if (access.route === REQUEST_LOG_ROUTE) return
  const elapsed = performance.now() - access.started
  sink.offer({
    profileId: access.profileId,
    requestId: response.headers["x-request-id"] ?? "",
    method: request.method,
    path: pathOf(request.url).slice(0, MAX_LOGGED_PATH),
    route: access.route ?? null,
    status: response.status,
    durationMs: Math.round(elapsed),
    principalKind: access.principalKind,
    keyId: access.keyId,
    startedAt: Date.now() - elapsed
  })
}

/** Paths whose parameters reach handlers; the others (health, docs, discovery) read none. */
const readsQuery = (url: string) => url.startsWith("/api/") || url.startsWith("/oauth/") || url.startsWith("/t/") || url.startsWith("/rpc")

const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.method !== "GET" && request.method !== "HEAD" &&
  (request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? "0") > 0)

const refusal = (request: HttpServerRequest.HttpServerRequest, field: string, context: RenderContext) => {
  const refused = unstorableRefusal(request.method, pathOf(request.url), field)
  return "error" in refused
    ? errorResponse(refused.error, context)
    : HttpServerResponse.setHeader(refused.response, "x-request-id", context.requestId)
}

const pathOf = (url: string) => {
  const queryStart = url.indexOf("?")
  return queryStart === -1 ? url : url.slice(0, queryStart)
}

export const EnvelopeLayer: Layer.Layer<never, never, AppConfig | HttpRouter.HttpRouter> = Layer.merge(
  EnvelopeMiddleware,
  NotFoundRoute
)
