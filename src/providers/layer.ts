/**
 * Every provider port with what it needs (the endpoints, one shared HTTP client, so one set of
 * per-connection buckets), for the domains that call providers. AppConfig comes from below.
 */
import { Layer } from "effect"
import { AdPlatformLive } from "./adplatform/live.ts"
import { ProviderEndpoints } from "./endpoints.ts"
import { ProviderHttp } from "./http.ts"
import { ProviderOAuthLive } from "./oauth/live.ts"

export const ProvidersLive = Layer.mergeAll(ProviderOAuthLive, AdPlatformLive).pipe(
  Layer.provideMerge(ProviderHttp.layer),
  Layer.provideMerge(ProviderEndpoints.layer)
)
