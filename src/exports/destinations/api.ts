/** Export destinations and their test event over HTTP (routes.tsv "Conversion sync"; decision 0074). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdplatformUnavailable,
  DestinationConflict,
  EntitlementRequired,
  InvalidParameter,
  profileErrors,
  ValidationError
} from "../../../schema/errors.ts"
import {
  CreateDestination,
  DestinationCreated,
  Deleted,
  DestinationEnvelope,
  DestinationIdParams,
  DestinationPage,
  DestinationsQuery,
  TestEvent,
  TestEventResult,
  UpdateDestination
} from "../../../schema/exports.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

/** Creates and the test event take an optional `Idempotency-Key` (a retry answers the first answer). */
const write = (idempotency: "optional" | "none") =>
  policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency, entitlement: "svc_attribution" })
const writeErrors = [...profileErrors, ValidationError.wire, EntitlementRequired.wire] as const

export const ExportDestinationsApi = HttpApiGroup.make("exportDestinations")
  .add(
    HttpApiEndpoint.get("listDestinations", "/exports/destinations", {
      query: DestinationsQuery,
      success: DestinationPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The profile's export destinations, oldest first (keyset cursor)")
      .annotate(
        OpenApi.Description,
        "Each destination shows the profile's `platform_safe_target` and its `backlog`: exports waiting (pending or held), " +
          "the oldest's age and the last minute's deliveries, read at answer time. Deleted destinations are not listed."
      )
      .annotateMerge(policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.post("createDestination", "/exports/destinations", {
      payload: CreateDestination,
      success: DestinationCreated,
      error: [...writeErrors, DestinationConflict.wire]
    })
      .annotate(OpenApi.Summary, "Create an export destination: a Conversions API lane to a dataset through an ad-platform connection")
      .annotate(
        OpenApi.Description,
        "`kind` `adplatform_capi` (website lane) or `adplatform_capi_messaging` (business-messaging lane). A live destination with " +
          "the same kind and dataset answers 409 `destination_conflict` with `conflicting_destination_id`; nothing is written."
      )
      .annotateMerge(write("optional")),
    HttpApiEndpoint.patch("updateDestination", "/exports/destinations/:id", {
      params: DestinationIdParams,
      payload: UpdateDestination,
      success: DestinationEnvelope,
      error: [...writeErrors, DestinationConflict.wire]
    })
      .annotate(OpenApi.Summary, "Edit, disable or re-enable an export destination")
      .annotate(OpenApi.Description, "A dataset another live destination of the same kind already uses answers 409 `destination_conflict`; nothing is written.")
      .annotateMerge(write("none")),
    HttpApiEndpoint.delete("deleteDestination", "/exports/destinations/:id", {
      params: DestinationIdParams,
      success: Deleted,
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Delete an export destination")
      .annotate(OpenApi.Description, "Nothing more is sent to it; its delivery ledger rows stay.")
      .annotateMerge(write("none")),
    HttpApiEndpoint.post("testDestination", "/exports/destinations/:id/test-event", {
      params: DestinationIdParams,
      payload: TestEvent,
      success: TestEventResult,
      error: [...writeErrors, AdplatformUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Send a test event to the destination and answer the platform's reply")
      .annotate(
        OpenApi.Description,
        "Goes through the same send path as the pipeline, marked as a test (`custom_data.test_event`, no person); the ledger " +
          "records it with `test: true`. 502 `adplatform_unavailable` when the platform does not take it."
      )
      .annotateMerge(write("optional"))
  )
  .prefix("/api/v1")
