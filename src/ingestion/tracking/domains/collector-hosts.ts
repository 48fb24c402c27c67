/**
 * The collector's `Host` check (decision 0034). A request to a hostname registered as a custom
 * collector domain is accepted only when that domain is active (verified) and belongs to the
 * tracking key's profile. Any other host (the service's own, an IP address, an internal name
 * behind a proxy) is served as before. What a runner read about a hostname is trusted for 5 s;
 * registering, verifying and removing a domain clear it on the runner that made the change.
 */
import { isIP } from "node:net"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, InsufficientScope } from "../../../../schema/errors.ts"
import { AppConfig } from "../../../platform/config.ts"
import { type HostRow, TrackingDomainsRepo } from "./repo.ts"

/** The collector URL on a custom domain (served over https by the edge in front of the service). */
export const customCollectorUrl = (hostname: string) => `https://${hostname}/t/collect`

const HOST_CACHE_MS = 5_000
const HOST_CACHE_SIZE = 10_000

/** The host name of a `Host` header: lower-case, without the port and a trailing dot. */
export const hostnameOf = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const value = header.trim().toLowerCase()
  if (value === "" || value.startsWith("[")) return undefined
  const name = value.replace(/:\d+$/, "").replace(/\.$/, "")
  return name === "" ? undefined : name
}

export class CollectorHosts extends Context.Service<CollectorHosts, {
  /** Fails with 403 when `host` is a custom domain that is not an active domain of `profileId`. */
  readonly check: (host: string | undefined, profileId: string) => Effect.Effect<void, InsufficientScope | DatabaseUnavailable>
  /** Drops what this runner read about hostnames. */
  readonly forget: Effect.Effect<void>
}>()("svc/CollectorHosts") {
  static readonly layer = Layer.effect(CollectorHosts)(
    Effect.gen(function*() {
      const repo = yield* TrackingDomainsRepo
      const config = yield* AppConfig
      const serviceHost = new URL(config.baseUrl).hostname.toLowerCase()
      const cache = new Map<string, { readonly owner: Option.Option<HostRow>; readonly until: number }>()

      const ownerOf = (hostname: string) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const cached = cache.get(hostname)
          if (cached !== undefined && cached.until > now) return cached.owner
          const owner = yield* repo.hostOwner(hostname)
          if (cache.size >= HOST_CACHE_SIZE) cache.clear()
          cache.set(hostname, { owner, until: now + HOST_CACHE_MS })
          return owner
        })

      const refused = () =>
        new InsufficientScope({
          message: "This host is not an active tracking domain of the key's profile.",
          reason: "collector_host_not_allowed"
        })

      const check = (header: string | undefined, profileId: string) => {
        const hostname = hostnameOf(header)
        // Custom domains are DNS names: the service's own host and addresses are never one.
        if (hostname === undefined || hostname === serviceHost || hostname === "localhost" || isIP(hostname) !== 0) {
          return Effect.void
        }
        return Effect.flatMap(ownerOf(hostname), (owner) =>
          Option.match(owner, {
            onNone: () => Effect.void,
            onSome: (row) => row.active && row.profile_id === profileId ? Effect.void : Effect.fail(refused())
          }))
      }

      return { check, forget: Effect.sync(() => cache.clear()) }
    })
  ).pipe(Layer.provide(TrackingDomainsRepo.layer))
}
