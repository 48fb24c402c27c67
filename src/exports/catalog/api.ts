/** The conversion-sync catalog over HTTP (routes.tsv "Conversion sync and Platform-Safe"; decision 0073). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { EntitlementRequired, InvalidState, profileErrors, ValidationError } from "../../../schema/errors.ts"
import { Catalog, PutCatalog } from "../../../schema/exports.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

export const ConversionSyncCatalogApi = HttpApiGroup.make("conversionSyncCatalog")
  .add(
    HttpApiEndpoint.get("getCatalog", "/conversion-sync/catalog", { success: Catalog, error: profileErrors })
      .annotate(OpenApi.Summary, "The profile's conversion-sync privacy settings")
      .annotate(OpenApi.Description, "`settings.privacy_mode`, `settings.privacy_config`, `settings.platform_safe_target` (`existing` by default) and " +
        "`settings.platform_safe_audiences` (`disabled` by default).")
      .annotateMerge(policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.put("putCatalog", "/conversion-sync/catalog", {
      payload: PutCatalog,
      success: Catalog,
      error: [...profileErrors, ValidationError.wire, InvalidState.wire, EntitlementRequired.wire]
    })
      .annotate(OpenApi.Summary, "Replace the privacy settings: the mode, the whole privacy_config, the Platform-Safe target")
      .annotate(
        OpenApi.Description,
        "The PUT replaces `privacy_config` (absent or null clears it: re-send the current one to keep it). `custom` needs a " +
          "`privacy_config`. An absent `platform_safe_target` keeps the stored one. Moving to `platform_safe` or `hipaa` revokes " +
          "the live delegated keys carrying `customers:read` or `visitors:read`; `revoked_keys` counts them. A partner app's " +
          "delegated key cannot move a mode other than `standard` (409 `invalid_state`, reason `privacy_mode_locked`). " +
          "`platform_safe_audiences` (`enabled` or `disabled`; absent keeps it) switches a Platform-Safe profile's customer-list audiences on."
      )
      .annotateMerge(policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none", entitlement: "svc_attribution" }))
  )
  .prefix("/api/v1")
