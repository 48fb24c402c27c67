import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  EntitlementRequired,
  EventAlreadyExported,
  EventLinkedToConversation,
  EventNotFound,
  HealthcareScopeForbidden,
  IdempotencyKeyConflict,
  InvalidDateRange,
  InvalidParameter,
  InvalidState,
  profileErrors,
  ValidationError
} from "../../../../schema/errors.ts"
import {
  ConversionPage,
  ConversionsQuery,
  IngestedEvent,
  IngestEvent,
  OutcomeReplayPage,
  OutcomeReplayQuery,
  Retraction,
  RetractEvent
} from "../../../../schema/events.ts"
import { policy, PROFILE_PRINCIPALS } from "../../../http/policy.ts"


/** Server-side events, retractions and the conversions list. Decision 0029. */
export const EventsApi = HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.post("ingestEvent", "/events", {
      payload: IngestEvent,
      success: IngestedEvent,
      error: [
        ...profileErrors,
        ValidationError.wire,
        InvalidParameter.wire,
        IdempotencyKeyConflict.wire,
        InvalidState.wire,
        EntitlementRequired.wire
      ]
    })
      .annotate(
        OpenApi.Summary,
        "Record a server-side outcome event; idempotent on the body's idempotency_key (the same key answers the same outcome)"
      )
      .annotate(
        OpenApi.Description,
        "An event becomes a conversion only when a conversion definition of the profile lists its `event_name`. When none " +
          "does, the answer is still 200 with `conversion_id: null` and `meta.warnings: [{code: \"no_conversion_definition\", " +
          "message}]`; a later definition does not turn it into a conversion. `meta` is absent when there is no warning. " +
          "Analytics reads count the conversion a few seconds later (their `meta.as_of`)."
      )
      .annotateMerge(policy({
        scopes: ["events:write"],
        auth: PROFILE_PRINCIPALS,
        grain: "profile",
        idempotency: "none",
        entitlement: "svc_attribution"
      })),
    HttpApiEndpoint.post("retractEvent", "/events/retractions", {
      payload: RetractEvent,
      success: Retraction,
      error: [...profileErrors, ValidationError.wire, EventNotFound.wire, EventAlreadyExported.wire, EventLinkedToConversation.wire]
    })
      .annotate(OpenApi.Summary, "Retract an event by its idempotency_key: its conversions and credit go; answers counts only")
      .annotateMerge(policy({ scopes: ["events:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.get("listConversions", "/conversions", {
      query: ConversionsQuery,
      success: ConversionPage,
      error: [...profileErrors, InvalidParameter.wire, InvalidDateRange.wire]
    })
      .annotate(OpenApi.Summary, "The profile's conversions, newest first (keyset cursor; limit 1 to 200, default 50)")
      .annotateMerge(policy({ scopes: ["conversions:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.get("replayOutcomes", "/outcomes/recorded", {
      query: OutcomeReplayQuery,
      success: OutcomeReplayPage,
      error: [...profileErrors, InvalidParameter.wire, HealthcareScopeForbidden.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Replay the profile's outcome.recorded events in order from an opaque cursor (90-day window; contact only with customers:read)"
      )
      .annotate(
        OpenApi.Description,
        "The same events webhooks deliver, oldest first. `pagination.cursor` is where to continue (also when nothing newer " +
          "exists yet: poll it later). Events younger than 10 seconds are answered once they settle, so a cursor never " +
          "passes an event committed later. On a healthcare-family profile only the provisioning app's keys may replay: " +
          "403 `healthcare_scope_forbidden` for anyone else."
      )
      .annotateMerge(policy({
        scopes: ["conversions:read", "customers:read"],
        scopeMode: "any",
        auth: PROFILE_PRINCIPALS,
        grain: "profile",
        idempotency: "none"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Server-side events and conversions")
