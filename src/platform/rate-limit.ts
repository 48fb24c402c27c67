import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { NodeRedis } from "@effect/platform-node"
import * as RateLimiter from "effect/persistence/RateLimiter"
import { RateLimitExceeded } from "../../schema/errors.ts"
import { AppConfig } from "./config.ts"

/**
 * The rate limiter's counters: in memory for one process, in Redis (`REDIS_URL`) when
 * several runners must share them.
 */
export const RateLimiterLive: Layer.Layer<RateLimiter.RateLimiter, unknown, AppConfig> = Layer.unwrap(
  AppConfig.useSync((settings) =>
    Option.match(settings.redisUrl, {
      onNone: () => RateLimiter.layer.pipe(Layer.provide(RateLimiter.layerStoreMemory)),
      onSome: (url) =>
        RateLimiter.layer.pipe(
          Layer.provide(RateLimiter.layerStoreRedis({ prefix: "svc:ratelimit:" })),
          Layer.provide(NodeRedis.layer({ url: Redacted.value(url) }))
        )
    })
  )
)

export interface BucketOptions {
  readonly key: string
  readonly limit: number
  readonly window: Duration.Input
  readonly tokens?: number
  /** The error a full bucket answers (its `retry_after_seconds` is filled in). */
  readonly exceeded: { readonly message: string; readonly reason?: string }
}

/**
 * Takes `tokens` from a fixed-window bucket: the counts when it had room, 429
 * `rate_limit_exceeded` with `retry_after_seconds` when it did not, and None when the counter
 * store cannot be reached (a limiter outage must not lock every client out; it is logged).
 *
 * It runs on every metered request: pass `window` as a `Duration` (a string is parsed on every
 * call), and both outcomes are handled by one `matchEffect`.
 */
export const consumeBucket = (
  limiter: RateLimiter.RateLimiter,
  options: BucketOptions
): Effect.Effect<Option.Option<RateLimiter.ConsumeResult>, RateLimitExceeded> =>
  Effect.matchEffect(
    limiter.consume({
      algorithm: "fixed-window",
      onExceeded: "fail",
      window: options.window,
      limit: options.limit,
      key: options.key,
      tokens: options.tokens ?? 1
    }),
    {
      onSuccess: (result) => Effect.succeed(Option.some(result)),
      onFailure: (error) =>
        error.reason._tag === "RateLimitExceeded"
          ? Effect.fail(
            new RateLimitExceeded({
              ...options.exceeded,
              retry_after_seconds: Math.max(1, Math.ceil(Duration.toSeconds(error.reason.retryAfter)))
            })
          )
          : Effect.as(
            Effect.logWarning(`rate limiter store unavailable; ${options.key} not metered`, error),
            Option.none()
          )
    }
  )
