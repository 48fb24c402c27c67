/**
 * The one HTTP client every provider port calls through (decision 0056): a timeout per attempt,
 * retries with jittered exponential backoff on transport failures, timeouts, 408, 429 and 5xx
 * honouring `Retry-After`, a token bucket per connection (waiting for a token is a plain,
 * interruptible sleep in the caller's fiber: nothing is forked), one span per call, and the
 * outcome mapped onto src/connections/providers/errors.ts. Lists come as lazily fetched pages.
 */
import { Clock, Context, Duration, Effect, Layer, Metric, Option, Redacted, Schedule, Schema, Stream } from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import {
  type ProviderError,
  ProviderAuthRevoked,
  ProviderPermissionMissing,
  ProviderRefused,
  ProviderThrottled,
  ProviderUnavailable
} from "./errors.ts"
import { ProviderEndpoints } from "./endpoints.ts"
import { observe, providerCallDuration, providerThrottles } from "../../platform/metrics.ts"
import { OutboundHttpLayer } from "../../platform/outbound-http.ts"
import { CurrentTraceState } from "../../platform/tracing.ts"
import type { ProviderKind } from "./registry.ts"

export interface ProviderRequest {
  readonly provider: ProviderKind
  /** The port operation, e.g. `adplatform.listAds`: names the span and the errors. */
  readonly operation: string
  /** The bucket's key; absent for consent-time calls made before a connection exists (token exchange, /v1/me). */
  readonly connectionId?: string | undefined
  readonly method: "GET" | "POST" | "PATCH" | "DELETE"
  /** Appended to the provider's base URL: `/v1/accounts/act_1/ads`. */
  readonly path: string
  readonly query?: Readonly<Record<string, string | number | undefined>> | undefined
  readonly accessToken?: Redacted.Redacted<string> | undefined
  readonly json?: unknown
  readonly form?: Readonly<Record<string, string>> | undefined
  /**
   * False for a call that must not run twice (it creates something): a timeout or a dropped
   * connection, after which the provider may have acted, is then not retried; answers that say
   * it did not act (429, 5xx) still are. Default true.
   */
  readonly idempotent?: boolean | undefined
}

export interface ProviderHttpOptions {
  /** Calls per second per connection, sustained (below the sandbox's 100 per token). */
  readonly ratePerSecond: number
  /** Calls a connection may make at once after being idle. */
  readonly burst: number
  /** Retries after the first attempt. */
  readonly retries: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  readonly attemptTimeoutMs: number
}

export const DEFAULT_PROVIDER_HTTP: ProviderHttpOptions = {
  ratePerSecond: 50,
  burst: 10,
  retries: 3,
  baseDelayMs: 250,
  maxDelayMs: 4_000,
  attemptTimeoutMs: 10_000
}

/** The largest page the providers serve (docs/sandbox-providers.md). */
export const PAGE_LIMIT = 500

const Page = Schema.Struct({
  data: Schema.Array(Schema.Unknown),
  paging: Schema.optional(Schema.Struct({ next: Schema.optional(Schema.NullOr(Schema.String)) }))
})

const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.optional(Schema.String),
    permission: Schema.optional(Schema.String),
    retry_after_seconds: Schema.optional(Schema.Finite)
  })
})

/**
 * A generic cell rate: each call moves the connection's theoretical arrival time on by one
 * interval; a call waits while that time is more than `burst` intervals ahead of now.
 */
const makeBuckets = (options: ProviderHttpOptions) => {
  const interval = 1000 / options.ratePerSecond
  const arrivals = new Map<string, number>()
  return (key: string | undefined): Effect.Effect<void> =>
    key === undefined ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (arrivals.size > 10_000) {
        for (const [k, at] of arrivals) if (at < now) arrivals.delete(k)
      }
      const next = Math.max(arrivals.get(key) ?? now, now) + interval
      arrivals.set(key, next)
      const wait = next - now - options.burst * interval
      return wait > 0 ? Effect.sleep(Duration.millis(wait)) : Effect.void
    })
}

const retryAfterSeconds = (response: HttpClientResponse.HttpClientResponse): number => {
  const header = response.headers["retry-after"]
  const seconds = header === undefined ? Number.NaN : Number(header)
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : 1
}

const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))

export class ProviderHttp extends Context.Service<ProviderHttp, {
  /** One call; the parsed JSON body of a 2xx (null when empty). */
  readonly call: (request: ProviderRequest) => Effect.Effect<unknown, ProviderError>
  /** Every item of a paged list, one page fetched at a time as the stream is pulled. */
  readonly pages: (request: ProviderRequest, pageSize?: number) => Stream.Stream<unknown, ProviderError>
}>()("svc/ProviderHttp") {
  static readonly layerWith = (options: ProviderHttpOptions) =>
    Layer.effect(ProviderHttp)(Effect.gen(function*() {
      const endpoints = yield* ProviderEndpoints
      const take = makeBuckets(options)
      const base = yield* HttpClient.HttpClient
      const schedule = Schedule.exponential(Duration.millis(options.baseDelayMs)).pipe(
        Schedule.jittered,
        Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.millis(options.maxDelayMs))))
      )

      const call = (request: ProviderRequest): Effect.Effect<unknown, ProviderError> => {
        const facts = { provider: request.provider, operation: request.operation }
        const url = `${endpoints.endpoint(request.provider).baseUrl}${request.path}`
        let built = HttpClientRequest.make(request.method)(url, { acceptJson: true })
        if (request.query !== undefined) {
          for (const [name, value] of Object.entries(request.query)) {
            if (value !== undefined) built = HttpClientRequest.setUrlParam(built, name, String(value))
          }
        }
        if (request.accessToken !== undefined) built = HttpClientRequest.bearerToken(built, Redacted.value(request.accessToken))
        if (request.form !== undefined) built = HttpClientRequest.bodyUrlParams(built, request.form)
        else if (request.json !== undefined) built = HttpClientRequest.bodyJsonUnsafe(built, request.json)
        // Every attempt waits for the connection's bucket, then gets its own time limit.
        const client = HttpClient.transformResponse(base, (response) =>
          Effect.andThen(take(request.connectionId), Effect.timeout(response, Duration.millis(options.attemptTimeoutMs))))
          .pipe(HttpClient.retryTransient({
            retryOn: request.idempotent === false ? "response-only" : "errors-and-responses",
            times: options.retries,
            schedule
          }))
        // The client span adds `traceparent`; the caller's `tracestate` goes on with it (W3C).
        const traced = Effect.withFiber((fiber) => {
          const tracestate = fiber.getRef(CurrentTraceState)
          return client.execute(tracestate === "" ? built : HttpClientRequest.setHeader(built, "tracestate", tracestate))
        })
        return Effect.suspend(() => {
          const started = performance.now()
          return traced.pipe(
            Effect.flatMap((response) =>
              response.text.pipe(
                Effect.timeout(Duration.millis(options.attemptTimeoutMs)),
                Effect.map((text) => ({ response, text }))
              )
            ),
            Effect.mapError((error) =>
              new ProviderUnavailable({ ...facts, status: null, detail: error._tag === "TimeoutError" ? "timed out" : error.message })
            ),
            Effect.tap(({ response }) => Effect.annotateCurrentSpan("http.response.status_code", response.status)),
            Effect.flatMap(({ response, text }) => outcome(facts, response, text)),
            Effect.onExit((exit) => {
              const result = exit._tag === "Success" ? "ok" : exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error._tag ?? "defect"
              const attributes = { "svc.provider": request.provider, "svc.provider.operation": request.operation, "svc.outcome": result }
              return Effect.andThen(
                observe(providerCallDuration, (performance.now() - started) / 1000, attributes),
                result === "ProviderThrottled"
                  ? Metric.update(Metric.withAttributes(providerThrottles, { "svc.provider": request.provider, "svc.provider.operation": request.operation }), 1)
                  : Effect.void
              )
            }),
            Effect.withSpan(`provider.${request.operation}`, {
              attributes: {
                "provider.name": request.provider,
                "provider.operation": request.operation,
                ...(request.connectionId === undefined ? {} : { "provider.connection_id": request.connectionId })
              }
            })
          )
        })
      }

      const pages = (request: ProviderRequest, pageSize: number = PAGE_LIMIT): Stream.Stream<unknown, ProviderError> =>
        Stream.paginate(Option.none<string>(), (after) =>
          call({
            ...request,
            query: { ...request.query, limit: pageSize, after: Option.getOrUndefined(after) }
          }).pipe(
            Effect.flatMap((body) =>
              Schema.decodeUnknownEffect(Page)(body).pipe(
                Effect.mapError(() =>
                  new ProviderUnavailable({
                    provider: request.provider,
                    operation: request.operation,
                    status: 200,
                    detail: "the provider answered a page without data"
                  })
                )
              )
            ),
            Effect.map((page) => {
              const next = page.paging?.next
              return [page.data, next === undefined || next === null ? Option.none() : Option.some(Option.some(next))] as const
            })
          ))

      return { call, pages }
    }))

  /** Over the service's one outbound client (src/platform/outbound-http.ts), shared with the webhook deliveries. */
  static readonly layer = ProviderHttp.layerWith(DEFAULT_PROVIDER_HTTP).pipe(Layer.provide(OutboundHttpLayer))
}

const outcome = (
  facts: { readonly provider: ProviderKind; readonly operation: string },
  response: HttpClientResponse.HttpClientResponse,
  text: string
): Effect.Effect<unknown, ProviderError> => {
  const parsed = text.length === 0 ? Option.some<unknown>(null) : decodeJson(text)
  const status = response.status
  if (status >= 200 && status < 300) {
    return Option.isSome(parsed)
      ? Effect.succeed(parsed.value)
      : Effect.fail(new ProviderUnavailable({ ...facts, status, detail: "the provider answered a body that is not JSON" }))
  }
  const error = Option.flatMap(parsed, Schema.decodeUnknownOption(ErrorBody))
  const code = Option.match(error, { onNone: () => "unknown", onSome: (body) => body.error.code })
  const detail = Option.match(error, {
    onNone: () => `HTTP ${status}`,
    onSome: (body) => body.error.message ?? body.error.code
  })
  if (status === 401) return Effect.fail(new ProviderAuthRevoked(facts))
  if (status === 403 && code === "permission_missing") {
    const permission = Option.match(error, { onNone: () => "unknown", onSome: (body) => body.error.permission ?? "unknown" })
    return Effect.fail(new ProviderPermissionMissing({ ...facts, permission }))
  }
  if (status === 429) return Effect.fail(new ProviderThrottled({ ...facts, retryAfterSeconds: retryAfterSeconds(response) }))
  if (status >= 500 || status === 408) return Effect.fail(new ProviderUnavailable({ ...facts, status, detail }))
  const retryAfter = Option.flatMap(error, (body) => Option.fromNullishOr(body.error.retry_after_seconds))
  return Effect.fail(new ProviderRefused({ ...facts, status, code, detail, retryAfterSeconds: Option.getOrUndefined(retryAfter) }))
}
