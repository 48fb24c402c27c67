/** Data-source datasets over HTTP (routes.tsv "Conversion sync and Platform-Safe"; decision 0091). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  ChatAppAConnectionRequired,
  EntitlementRequired,
  InvalidState,
  profileErrors,
  RateLimitExceeded,
  SocialDmConnectionRequired,
  SocialDmLoginRequired,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import {
  CreateDataset,
  DataSourceOptions,
  DataSourcesList,
  EnsureBody,
  EnsureCreated,
  EnsureExisting,
  EnsureWebsiteBody
} from "../../../schema/platform-safe.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const write = policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "optional", entitlement: "svc_attribution" })
const read = policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })
const errors = [
  ...profileErrors,
  ValidationError.wire,
  EntitlementRequired.wire,
  InvalidState.wire,
  AdplatformConnectionRequired.wire,
  AdplatformWritePermissionMissing.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

export const DataSourcesApi = HttpApiGroup.make("dataSources")
  .add(
    HttpApiEndpoint.post("ensureWhatsappDataset", "/conversion-sync/data-sources/whatsapp/ensure", {
      payload: EnsureBody,
      success: [EnsureCreated, EnsureExisting],
      error: [...errors, ChatAppAConnectionRequired.wire]
    })
      .annotate(OpenApi.Summary, "Create (or find) the business chat account's dataset and wire it")
      .annotate(OpenApi.Description, "201 when created now, 200 when it exists. 409 `chat_app_a_connection_required` without a business chat connection, before any ad-platform call.")
      .annotateMerge(write),
    HttpApiEndpoint.post("ensureWebsiteDataset", "/conversion-sync/data-sources/website/ensure", {
      payload: EnsureWebsiteBody,
      success: [EnsureCreated, EnsureExisting],
      error: [...errors, wireUnprocessable]
    })
      .annotate(OpenApi.Summary, "Attach one of the ad account's existing pixels to the website source")
      .annotate(
        OpenApi.Description,
        "Never creates a pixel. `pixel_id` names one of `selectable_pixels` (optional when the account has exactly one); " +
          "an unknown one is 422; none to choose from or several without `pixel_id` is 409 `invalid_state`."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("ensureInstagramDataset", "/conversion-sync/data-sources/instagram/ensure", {
      payload: EnsureBody,
      success: [EnsureCreated, EnsureExisting],
      error: [...errors, SocialDmConnectionRequired.wire, SocialDmLoginRequired.wire]
    })
      .annotate(OpenApi.Summary, "Create (or find) the social DM account's dataset and wire it")
      .annotate(
        OpenApi.Description,
        "409 `social_dm_connection_required` without a connection, 409 `social_dm_login_required` for an account connected " +
          "through the wrong login type, both before any ad-platform call. 201 when created now, 200 when it exists."
      )
      .annotateMerge(write),
    HttpApiEndpoint.get("listDataSources", "/conversion-sync/data-sources", { success: DataSourcesList, error: profileErrors })
      .annotate(OpenApi.Summary, "Per data source: whether its dataset is wired, blockers, 30-day export preview, sharing")
      .annotate(
        OpenApi.Description,
        "Business chat (`whatsapp`), website pixel (`website`), social DM (`instagram`). `shared_with_profiles` lists the " +
          "workspace's other profiles on the same dataset; `warning: meta_destination_shared` when any other profile sends to it."
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("listDataSourceOptions", "/conversion-sync/data-source-options", { success: DataSourceOptions, error: profileErrors })
      .annotate(OpenApi.Summary, "Connectable data sources")
      .annotate(
        OpenApi.Description,
        "Each source with the provider it needs, whether the profile has it connected, its ensure route, and whether the ensure " +
          "creates a dataset (`create_dataset`) or attaches an existing pixel (`attach_pixel`)."
      )
      .annotateMerge(read),
    HttpApiEndpoint.post("createDataset", "/conversion-sync/datasets", {
      payload: CreateDataset,
      success: [EnsureCreated, EnsureExisting],
      error: [...errors, wireUnprocessable, ChatAppAConnectionRequired.wire, SocialDmConnectionRequired.wire, SocialDmLoginRequired.wire]
    })
      .annotate(OpenApi.Summary, "Create or retrieve a data source's dataset and wire it as a Conversions API destination")
      .annotate(OpenApi.Description, "`source` picks the ensure call it runs (same answers and errors).")
      .annotateMerge(write)
  )
  .prefix("/api/v1")
