/** Platform-Safe over HTTP (routes.tsv "Conversion sync and Platform-Safe"; decisions 0089-0090). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  CleanDatasetHasLiveAdSets,
  ConsentRequired,
  EntitlementRequired,
  InvalidState,
  PlatformSafeRequired,
  profileErrors,
  RateLimitExceeded,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { ProvisionBody, ProvisionResult, RepointBody, RepointResult, TargetBody, TargetResult } from "../../../schema/platform-safe.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const write = policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "optional", entitlement: "svc_attribution" })
const platformErrors = [
  ...profileErrors,
  ValidationError.wire,
  EntitlementRequired.wire,
  PlatformSafeRequired.wire,
  InvalidState.wire,
  AdplatformConnectionRequired.wire,
  AdplatformWritePermissionMissing.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

export const PlatformSafeApi = HttpApiGroup.make("platformSafe")
  .add(
    HttpApiEndpoint.post("provisionPlatformSafe", "/conversion-sync/platform-safe/provision", {
      payload: ProvisionBody,
      success: ProvisionResult,
      error: platformErrors
    })
      .annotate(OpenApi.Summary, "Provision the Clean Dataset")
      .annotate(
        OpenApi.Description,
        "Empty body (optional `dataset_name`). `provisioned` (the target becomes `clean`), `already_provisioned` (no ad-platform " +
          "call, nothing written) or `action_required` (`ads_management_missing` with `missing_permissions`, `pixel_slot_taken` " +
          "with `manual_steps`); every 200 carries `checks`. 409 `platform_safe_required` outside Platform-Safe."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("platformSafeTarget", "/conversion-sync/platform-safe/target", {
      payload: TargetBody,
      success: TargetResult,
      error: [...platformErrors, CleanDatasetHasLiveAdSets.wire]
    })
      .annotate(OpenApi.Summary, "Switch the Platform-Safe target between the existing datasets and the Clean Dataset")
      .annotate(
        OpenApi.Description,
        "`{target: clean}` provisions when needed and lists `ad_sets_to_recreate` (each with its Clean Dataset target); " +
          "`action_required` answers `switched: false`. `{target: existing}` is 409 `clean_dataset_has_live_ad_sets` while " +
          "Clean Dataset ad sets deliver or the ad platform cannot be read, unless `confirm_live_ad_sets: true`."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("platformSafeRepoint", "/conversion-sync/platform-safe/repoint", {
      payload: RepointBody,
      success: RepointResult,
      error: [...platformErrors, ConsentRequired.wire, wireUnprocessable]
    })
      .annotate(OpenApi.Summary, "Point ad sets at the Clean Dataset, rebuilding frozen ones by duplicate swap")
      .annotate(
        OpenApi.Description,
        "Unpublished ad sets are re-pointed in place; published ones are listed in `needs_recreate` until " +
          "`confirm_recreate: true`, then rebuilt (copy created paused, ads copied, copy switched on, original paused last and " +
          "never deleted; `duplicate_swap_mode: run_both` keeps the original running). A key or token confirming a rebuild " +
          "sends `consent` (version `2026-09-23.duplicate-swap.v1`, SHA-256 of the en or es text, `accepted_at` within 24 " +
          "hours and at most 5 minutes ahead): 409 `consent_required` carries the current version and hashes; 422 when " +
          "malformed. Under target `existing` a key or token gets 409 `invalid_state` (`switch_to_clean_dataset`)."
      )
      .annotateMerge(write)
  )
  .prefix("/api/v1")
