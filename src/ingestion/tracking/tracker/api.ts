import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  DatabaseUnavailable,
  InsufficientScope,
  InvalidParameter,
  NotFound,
  PayloadTooLarge,
  RateLimitExceeded,
  Unauthorized,
  ValidationError
} from "../../../../schema/errors.ts"
import { openObject } from "../../../../schema/common.ts"
import { LinkTokenParameter } from "../../../../schema/link-tokens.ts"
import {
  CollectEvent,
  CollectPayload,
  SnippetQuery,
  SnippetScript,
  TrackingKeyBody,
  TrackingKeyCreated,
  TrackingKeyExisting,
  TrackingKeyList,
  TrackingSettingsBody,
  TrackingSettingsUpdated,
  UpdateTrackingSettings
} from "../../../../schema/tracking.ts"
import { policy } from "../../../http/policy.ts"
import { settingsWrite, trackingManagerRead, trackingRead, trackingWrite } from "../policies.ts"

const readErrors = [NotFound.wire, DatabaseUnavailable.wire]

/** Tracking keys, tracker settings and the snippet (decision 0031). */
export const TrackingApi = HttpApiGroup.make("tracking")
  .add(
    HttpApiEndpoint.post("createTrackingKey", "/tracking/keys", {
      success: [TrackingKeyCreated, TrackingKeyExisting],
      error: readErrors
    })
      .annotate(OpenApi.Summary, "The profile's active tracking key: 201 when this call created it, 200 when it existed")
      .annotate(
        OpenApi.Description,
        "Idempotent by natural key: a profile has at most one active tracking key, and asking again answers it " +
          "(`meta.created: false`). Tracking keys are public (`svc_pub_...`): the site's snippet carries one."
      )
      .annotateMerge(trackingWrite),
    HttpApiEndpoint.get("listTrackingKeys", "/tracking/keys", { success: TrackingKeyList, error: readErrors })
      .annotate(OpenApi.Summary, "The profile's active tracking keys")
      .annotateMerge(trackingRead),
    HttpApiEndpoint.delete("revokeTrackingKey", "/tracking/keys/:id", {
      params: { id: Schema.String },
      success: TrackingKeyBody,
      error: readErrors
    })
      .annotate(OpenApi.Summary, "Revoke a tracking key: the collector refuses it at once; a repeat answers the revoked key")
      .annotateMerge(trackingWrite),
    HttpApiEndpoint.get("getTrackingSettings", "/tracking/settings", { success: TrackingSettingsBody, error: readErrors })
      .annotate(OpenApi.Summary, "Tracker settings: allowed origins, click-id capture, cookie domain, Do-Not-Track")
      .annotateMerge(trackingManagerRead),
    HttpApiEndpoint.patch("updateTrackingSettings", "/tracking/settings", {
      payload: UpdateTrackingSettings,
      success: TrackingSettingsUpdated,
      error: [...readErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Change tracker settings; a change queues one full attribution replay (meta.replay_job_id)")
      .annotate(
        OpenApi.Description,
        "Only the fields sent change. When anything changes, one full attribution replay is queued for the profile " +
          "(reason `tracking_settings_changed`), coalesced with a replay already waiting; `meta.replay_job_id` names it. " +
          "A request that changes nothing queues nothing (`meta.changed: false`, `replay_job_id: null`)."
      )
      .annotateMerge(settingsWrite),
    HttpApiEndpoint.get("getTrackingSnippet", "/tracking/snippet", {
      query: SnippetQuery,
      success: SnippetScript,
      error: [...readErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The tracker script for the site (application/javascript)")
      .annotate(
        OpenApi.Description,
        "A small dependency-free script that posts only to this service's collector: anonymous id in a first-party " +
          "cookie, page views, SPA navigation, UTM and click-id capture. `bundle=adplatform_pixel&pixel_id=<digits>` " +
          "appends the ad platform's pixel loader, the only third-party request, and only when asked for."
      )
      .annotateMerge(trackingRead)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Web tracker: tracking keys, settings, snippet")

/**
 * The collector's body as published: the tracker event with the link token it forwards (decision
 * 0037), open like the collector reads it (other keys are ignored, decision 0048).
 */
const CollectorPayload = [
  openObject(Schema.Struct({ ...CollectEvent.fields, link_token: Schema.optionalKey(LinkTokenParameter) })).annotate({
    identifier: "TrackerEvent"
  }),
  CollectPayload[1]
] as const

const collectorPolicy = policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })

/**
 * The collector: public, called by browsers on the profile's allowed origins with the tracking
 * key in the body. Outside `/api/v1` and its middleware (no credential, no rate-limit bucket).
 */
export const CollectorApi = HttpApiGroup.make("collector")
  .add(
    HttpApiEndpoint.post("collect", "/t/collect", {
      payload: CollectorPayload,
      success: HttpApiSchema.NoContent,
      error: [
        ValidationError.wire,
        PayloadTooLarge.wire,
        Unauthorized.wire,
        InsufficientScope.wire,
        RateLimitExceeded.wire,
        DatabaseUnavailable.wire
      ]
    })
      .annotate(OpenApi.Summary, "Tracker events: one web touch per event (204); bots are dropped with the same 204")
      .annotate(
        OpenApi.Description,
        "Body: `{tracking_key, anonymous_id, type, url, referrer?, occurred_at?, session_id?, event_id?, attribution?, " +
          "landing_referrer?, properties?, link_token?}` as application/json or text/plain, at most 16 KB. An unknown or revoked key " +
          "answers 401 `unauthorized`; an `Origin` not in the profile's allowed origins (or none, unless the profile " +
          "allows server-side events) answers 403 `insufficient_scope`. A valid `link_token` (the landing URL's " +
          "`svc_lt`) binds the touch to its customer (`join_method: link_token`); an invalid, expired or other " +
          "profile's token, or an erased customer's, is ignored and the touch is stored unbound. One address sends at most " +
          "600 events per minute under one tracking key; more answer 429 `rate_limit_exceeded` with `Retry-After`."
      )
      .annotateMerge(collectorPolicy),
    HttpApiEndpoint.get("trackerScript", "/t/tracker.js", {
      query: {
        key: Schema.String.annotate({ description: "The profile's public tracking key (svc_pub_...)" }),
        bundle: SnippetQuery.bundle,
        pixel_id: SnippetQuery.pixel_id
      },
      success: SnippetScript,
      error: [NotFound.wire, InvalidParameter.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The tracker script for a `<script src>` tag: public, cacheable (ETag, 5 minutes), for an active tracking key")
      .annotate(
        OpenApi.Description,
        "The same script as `GET /api/v1/tracking/snippet`, addressed by the public tracking key, so a page or a tag " +
          "manager can load it without a credential. Answers `ETag` and `Cache-Control: public, max-age=300`; " +
          "`If-None-Match` with the current ETag answers 304. An unknown or revoked key answers 404."
      )
      .annotateMerge(collectorPolicy),
    HttpApiEndpoint.options("collectPreflight", "/t/collect", {
      success: HttpApiSchema.NoContent,
      error: [InsufficientScope.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "CORS pre-flight of the collector, for allowed origins")
      .annotateMerge(collectorPolicy)
  )
  .annotate(OpenApi.Description, "Web tracker collector")
