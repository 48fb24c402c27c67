/** The conversion-sync wiring over HTTP (routes.tsv "Conversion sync and Platform-Safe"; decision 0091). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  ConsentRequired,
  EntitlementRequired,
  InvalidState,
  PlatformSafeRequired,
  profileErrors,
  RateLimitExceeded,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { WireAdSetsBody, WireAdSetsResult, Wiring, WiringQuery } from "../../../schema/platform-safe.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const platformErrors = [
  AdplatformConnectionRequired.wire,
  AdplatformWritePermissionMissing.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

export const ConversionSyncWiringApi = HttpApiGroup.make("conversionSyncWiring")
  .add(
    HttpApiEndpoint.get("getWiring", "/conversion-sync/wiring", {
      query: WiringQuery,
      success: Wiring,
      error: [...profileErrors, ValidationError.wire, ...platformErrors]
    })
      .annotate(OpenApi.Summary, "Destinations, their routing and the Platform-Safe block")
      .annotate(
        OpenApi.Description,
        "`platform_safe` is null outside Platform-Safe. Without `force=1` the ad platform is not read and `ad_sets_to_move` is null; " +
          "with it, the ad sets still to move to the target dataset are listed. `event_mapping` carries the 7-day double-count " +
          "alert; `categorization.events_not_accepted` lists Lead, Schedule or Purchase sent on at least 3 of the last 7 days with none counted."
      )
      .annotateMerge(policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.post("recheckWiring", "/conversion-sync/wiring/recheck", {
      success: Wiring,
      error: [...profileErrors, ...platformErrors]
    })
      .annotate(OpenApi.Summary, "Re-read the wiring live from the ad platform")
      .annotate(OpenApi.Description, "The same answer as `GET /wiring?force=1`: the ad platform is read now and `ad_sets_to_move` is listed.")
      .annotateMerge(policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.post("wireAdSets", "/conversion-sync/wiring/ad-sets", {
      payload: WireAdSetsBody,
      success: WireAdSetsResult,
      error: [
        ...profileErrors,
        ValidationError.wire,
        EntitlementRequired.wire,
        InvalidState.wire,
        PlatformSafeRequired.wire,
        ConsentRequired.wire,
        wireUnprocessable,
        ...platformErrors
      ]
    })
      .annotate(OpenApi.Summary, "Point ad sets at a rule's conversion event")
      .annotate(
        OpenApi.Description,
        "Two rounds: the first re-points what the ad platform allows (drafts) and lists the published ad sets in " +
          "`needs_duplicate_swap`; the second, with `confirm_duplicate_swap: true` (and `duplicate_swap_mode` `switch` or " +
          "`run_both`), rebuilds them by duplicate swap. A key or token confirming sends `consent` as for repoint."
      )
      .annotateMerge(policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "optional", entitlement: "svc_attribution" }))
  )
  .prefix("/api/v1")
