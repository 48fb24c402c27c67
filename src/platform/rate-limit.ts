import { Layer, Option, Redacted } from "effect"
import { NodeRedis } from "@effect/platform-node"
import * as RateLimiter from "effect/persistence/RateLimiter"
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

