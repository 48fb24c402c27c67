/** The delivery ledger over HTTP (routes.tsv "Conversion sync"; decision 0075). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { InvalidParameter, profileErrors } from "../../../schema/errors.ts"
import { DeliveriesQuery, DeliveryPage } from "../../../schema/exports.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

export const ExportDeliveriesApi = HttpApiGroup.make("exportDeliveries")
  .add(
    HttpApiEndpoint.get("listDeliveries", "/exports/deliveries", {
      query: DeliveriesQuery,
      success: DeliveryPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The delivery ledger, newest first: one row per attempt decision (keyset cursor)")
      .annotate(
        OpenApi.Description,
        "`decision` `delivered`, `retrying`, `failed`, `held` (DPA or BAA not accepted), `skipped` (with `skip_reason`) or " +
          "`suppressed` (`routing: suppressed_platform_safe`). `action_source` is null for rows decided before a payload was " +
          "built. Filters: `destination_id`, `skip_reason` (e.g. `platform_safe_clean_dataset_inactive`, `no_website_destination`, " +
          "`action_source_degraded:business_messaging_to_system_generated`)."
      )
      .annotateMerge(policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" }))
  )
  .prefix("/api/v1")
