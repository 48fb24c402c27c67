/**
 * The tracker's installation and diagnostics routes (decision 0034): installers, custom collector
 * domains, install verification, the event feed, ops, origin and quality.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  DatabaseUnavailable,
  InvalidParameter,
  InvalidState,
  NotFound,
  ValidationError
} from "../../../../schema/errors.ts"
import {
  CommercePixelScript,
  CustomDomainBody,
  CustomDomainCreated,
  CustomDomainExisting,
  CustomDomainList,
  CustomDomainRemoved,
  InstallerQuery,
  InstallVerificationBody,
  InstallVerificationStarted,
  QualityQuery,
  RegisterCustomDomain,
  TagManagerContainer,
  TrackedEventPage,
  TrackedEventsQuery,
  TrackingOpsBody,
  TrackingOriginBody,
  TrackingQualityBody
} from "../../../../schema/tracking.ts"
import { trackingManagerRead, trackingRead, trackingWrite } from "../policies.ts"

const base = [DatabaseUnavailable.wire]

export const TrackingSetupApi = HttpApiGroup.make("trackingSetup")
  .add(
    HttpApiEndpoint.get("tagManagerInstaller", "/tracking/installers/gtm", {
      query: InstallerQuery,
      success: TagManagerContainer,
      error: [...base, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "A tag-manager container export (exportFormatVersion 2) that installs the tracker on all pages")
      .annotate(
        OpenApi.Description,
        "Answered as the container file itself (not wrapped in `data`), to import into a container (merge): one Custom " +
          "HTML tag holding the snippet with the profile's live tracking key, fired by a Page View trigger on all pages. " +
          "`?key=` picks one of the profile's active keys."
      )
      .annotateMerge(trackingRead),
    HttpApiEndpoint.get("commercePixelInstaller", "/tracking/installers/shopify-pixel", {
      query: InstallerQuery,
      success: CommercePixelScript,
      error: [...base, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "The commerce platform's custom web pixel (application/javascript) posting to the collector")
      .annotate(
        OpenApi.Description,
        "Subscribes to `page_viewed` and `checkout_completed` and posts each to the collector with the tracking key. " +
          "The platform's pixel sandbox sends no page origin: the profile needs `allow_server_side` in its tracking settings."
      )
      .annotateMerge(trackingRead),
    HttpApiEndpoint.get("listCustomDomains", "/tracking/custom-domains", { success: CustomDomainList, error: base })
      .annotate(OpenApi.Summary, "The profile's first-party collector domains with their DNS records and verdicts")
      .annotateMerge(trackingRead),
    HttpApiEndpoint.post("registerCustomDomain", "/tracking/custom-domains", {
      payload: RegisterCustomDomain,
      success: [CustomDomainCreated, CustomDomainExisting],
      error: [...base, ValidationError.wire, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Register a first-party collector domain: answers the CNAME and TXT records to create")
      .annotate(
        OpenApi.Description,
        "`{hostname}`: a public DNS name (a subdomain such as `t.shop.example.com`), not an IP address and not the " +
          "service's own host. 201 when this call registered it, 200 when the profile already had it; a hostname " +
          "another profile registered answers 409 `invalid_state`. Create both `dns_records`, then call `/verify`."
      )
      .annotateMerge(trackingWrite),
    HttpApiEndpoint.delete("removeCustomDomain", "/tracking/custom-domains/:id", {
      params: { id: Schema.String },
      success: CustomDomainRemoved,
      error: [...base, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "Remove a collector domain: the snippet falls back to the service's collector at once")
      .annotateMerge(trackingWrite),
    HttpApiEndpoint.post("verifyCustomDomain", "/tracking/custom-domains/:id/verify", {
      params: { id: Schema.String },
      success: CustomDomainBody,
      error: [...base, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "Re-check the domain's DNS records now and store the verdict (verified, pending, failed)")
      .annotate(
        OpenApi.Description,
        "`verified`: both records found; the domain becomes active (the snippet posts there). `pending`: `missing` names " +
          "what was not found (and what the name answered instead); an active domain stops serving. `failed`: the resolver " +
          "could not answer (`error`, e.g. a timeout); an active domain keeps serving."
      )
      .annotateMerge(trackingWrite),
    HttpApiEndpoint.get("getInstallVerification", "/tracking/verification", { success: InstallVerificationBody, error: base })
      .annotate(OpenApi.Summary, "The latest install-verification attempt: waiting, verified or expired (data: null when none)")
      .annotateMerge(trackingRead),
    HttpApiEndpoint.post("startInstallVerification", "/tracking/verification", {
      success: InstallVerificationStarted,
      error: base
    })
      .annotate(
        OpenApi.Summary,
        "Start an install verification: verified once a tracker event from an allowed origin arrives within 30 minutes"
      )
      .annotateMerge(trackingWrite),
    HttpApiEndpoint.get("listTrackedEvents", "/tracking/events", {
      query: TrackedEventsQuery,
      success: TrackedEventPage,
      error: [...base, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The raw enriched-event feed: the profile's latest tracker touches, newest first")
      .annotate(
        OpenApi.Description,
        "Keyset pages (`limit` 1-100, default 50; `cursor`). A debugging view of what the collector stored and how it " +
          "was classified: never the click id value, the anonymous or session id, the customer, or property values."
      )
      .annotateMerge(trackingManagerRead),
    HttpApiEndpoint.get("getTrackingOps", "/tracking/ops", { success: TrackingOpsBody, error: base })
      .annotate(OpenApi.Summary, "Collector diagnostics: touches in 24 h and 7 days, drops by reason, last event, collector lag")
      .annotateMerge(trackingRead),
    HttpApiEndpoint.get("getTrackingOrigin", "/tracking/origin", { success: TrackingOriginBody, error: base })
      .annotate(OpenApi.Summary, "Where the tracker collects: collector URL, custom domains and their state, allowed origins")
      .annotateMerge(trackingRead),
    HttpApiEndpoint.get("getTrackingQuality", "/tracking/quality", {
      query: QualityQuery,
      success: TrackingQualityBody,
      error: base
    })
      .annotate(
        OpenApi.Summary,
        "Tracking health over `days` (default 30): shares with UTMs, click ids, direct, unclassified, identified; drop rates"
      )
      .annotateMerge(trackingRead)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Web tracker installation and diagnostics")
