import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { NodeRedis } from "@effect/platform-node"
import * as RateLimiter from "effect/persistence/RateLimiter"
import { RateLimitExceeded } from "../../schema/errors.ts"
import { AppConfig } from "./config.ts"

/**
 * One fixed-window take, decided synchronously at `now`: the counts when the bucket had room,
 * or how long until it has room again.
 */
export type FixedWindowOutcome =
  | { readonly _tag: "Consumed"; readonly result: RateLimiter.ConsumeResult }
  | { readonly _tag: "Exceeded"; readonly retryAfter: Duration.Duration }

/** `consume` with `algorithm: "fixed-window"` and `onExceeded: "fail"` as a plain function. */
export type FixedWindowConsume = (
  options: { readonly key: string; readonly limit: number; readonly window: Duration.Duration; readonly tokens: number },
  now: number
) => FixedWindowOutcome

const ONE_MILLI = Duration.millis(1)
/** Counters kept before drained ones are swept. */
const MAX_COUNTERS = 50_000

/** Limiters whose counters live in this process, with their synchronous fixed-window take. */
const synchronousConsumers = new WeakMap<RateLimiter.RateLimiter, FixedWindowConsume>()

/**
 * The synchronous take of a limiter whose counters are in this process; undefined for any other
 * limiter (Redis: the shared counters are the only exact ones, so every take goes to Redis).
 */
export const fixedWindowConsumeOf = (limiter: RateLimiter.RateLimiter): FixedWindowConsume | undefined =>
  synchronousConsumers.get(limiter)

/**
 * effect's in-memory store with its fixed-window counters kept here, so that the request path
 * can take from them without an effect per step (docs/decisions/0027-auth-path-cost.md). The
 * arithmetic is `RateLimiter.make`'s `consume` over `layerStoreMemory`'s `fixedWindow`, step for
 * step (the same Duration rounding); the other algorithms stay effect's.
 */
const layerMemory: Layer.Layer<RateLimiter.RateLimiter> = Layer.effect(RateLimiter.RateLimiter)(
  Effect.gen(function*() {
    const effectStore = yield* RateLimiter.RateLimiterStore
    const counters = new Map<string, { count: number; expiresAt: number }>()
    let lastSweep = 0

    /** `layerStoreMemory`'s `fixedWindow`: [count after the take, ms until the window empties]. */
    const fixedWindowAt = (key: string, tokens: number, refillRateMillis: number, limit: number | undefined, now: number) => {
      // Buckets are keyed by credential, address or email: drop the drained ones now and then,
      // so the map does not grow with every address ever seen.
      if (counters.size >= MAX_COUNTERS && now - lastSweep >= 1_000) {
        lastSweep = now
        for (const [name, entry] of counters) if (entry.expiresAt <= now) counters.delete(name)
      }
      let counter = counters.get(key)
      if (counter === undefined || counter.expiresAt <= now) {
        counter = { count: 0, expiresAt: now }
        counters.set(key, counter)
      }
      if (limit && counter.count + tokens > limit) return [counter.count + tokens, counter.expiresAt - now] as const
      counter.count += tokens
      counter.expiresAt += refillRateMillis * tokens
      return [counter.count, counter.expiresAt - now] as const
    }

    const store: RateLimiter.RateLimiterStore["Service"] = {
      ...effectStore,
      fixedWindow: (options) =>
        Effect.clockWith((clock) =>
          Effect.sync(() =>
            fixedWindowAt(
              options.key,
              options.tokens,
              Duration.toMillis(options.refillRate),
              options.limit,
              clock.currentTimeMillisUnsafe()
            )
          )
        )
    }
    const limiter = yield* Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, store)

    // Per window and limit, as `consume` computes them (Duration.divideUnsafe rounds to whole
    // nanoseconds, so plain division could differ in the last digits).
    const refillMillisCache = new Map<Duration.Duration, Map<number, number>>()
    const refillMillis = (window: Duration.Duration, limit: number) => {
      let byLimit = refillMillisCache.get(window)
      if (byLimit === undefined) {
        byLimit = new Map()
        refillMillisCache.set(window, byLimit)
      }
      let millis = byLimit.get(limit)
      if (millis === undefined) {
        if (byLimit.size >= 1_000) byLimit.clear()
        millis = Duration.toMillis(Duration.divideUnsafe(window, limit))
        byLimit.set(limit, millis)
      }
      return millis
    }

    const consumeAt: FixedWindowConsume = (options, now) => {
      const window = Duration.max(options.window, ONE_MILLI)
      if (options.tokens > options.limit) return { _tag: "Exceeded", retryAfter: window }
      const [count, ttl] = fixedWindowAt(options.key, options.tokens, refillMillis(window, options.limit), options.limit, now)
      const remaining = options.limit - count
      if (remaining < 0) return { _tag: "Exceeded", retryAfter: Duration.millis(ttl) }
      return {
        _tag: "Consumed",
        result: { delay: Duration.zero, limit: options.limit, remaining, resetAfter: Duration.millis(ttl) }
      }
    }
    synchronousConsumers.set(limiter, consumeAt)
    return limiter
  })
).pipe(Layer.provide(RateLimiter.layerStoreMemory))

/**
 * The rate limiter's counters: in memory for one process, in Redis (`REDIS_URL`) when
 * several runners must share them.
 */
export const RateLimiterLayer: Layer.Layer<RateLimiter.RateLimiter, unknown, AppConfig> = Layer.unwrap(
  AppConfig.useSync((settings) =>
    Option.match(settings.redisUrl, {
      onNone: () => layerMemory,
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

/** The 429 of a full bucket, `retry_after_seconds` rounded up to at least one second. */
export const rateLimitExceeded = (exceeded: BucketOptions["exceeded"], retryAfter: Duration.Duration) =>
  new RateLimitExceeded({ ...exceeded, retry_after_seconds: Math.max(1, Math.ceil(Duration.toSeconds(retryAfter))) })

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
          ? Effect.fail(rateLimitExceeded(options.exceeded, error.reason.retryAfter))
          : Effect.as(
            Effect.logWarning(`rate limiter store unavailable; ${options.key} not metered`, error),
            Option.none()
          )
    }
  )
