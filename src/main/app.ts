/**
 * The HTTP application: the API's routes with their handlers and middleware, the docs
 * pages and the global envelope middleware, as one layer over an HttpRouter. Each handler
 * group brings the services it calls; a service several groups share is built once (layers
 * are memoised by reference within one build). The core services come from below (core.ts).
 */
import { Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminHandlers } from "../accounts/admin/handlers.ts"
import { AdActionsHandlers } from "../ads/actions/handlers.ts"
import { UrlTagsHandlers } from "../ads/url-tags/handlers.ts"
import { AnalyticsHandlers } from "../analytics/overview/handlers.ts"
import { CampaignsHandlers } from "../analytics/campaigns/handlers.ts"
import { InsightsHandlers } from "../analytics/insights/handlers.ts"
import { CreativeAnalysisHandlers } from "../analytics/creatives/handlers.ts"
import { RecommendationsHandlers } from "../ads/recommendations/handlers.ts"
import { DefinitionsHandlers } from "../attribution/definitions/handlers.ts"
import { AttributionHandlers } from "../attribution/recompute/handlers.ts"
import { ApiKeysHandlers } from "../accounts/api-keys/handlers.ts"
import { MeHandlers } from "../accounts/me/handlers.ts"
import { CsrfLayer, SessionsHandlers } from "../accounts/sessions/handlers.ts"
import { CommerceLiveHandlers } from "../ingestion/commerce/live/handlers.ts"
import { CommerceCopyHandlers } from "../ingestion/commerce/orders/handlers.ts"
import { ConversionSyncCatalogHandlers } from "../exports/catalog/handlers.ts"
import { ExportDestinationsHandlers } from "../exports/destinations/handlers.ts"
import { PlatformSafeHandlers } from "../exports/platform-safe/handlers.ts"
import { DataSourcesHandlers } from "../exports/data-sources/handlers.ts"
import { ConversionSyncWiringHandlers } from "../exports/wiring/handlers.ts"
import { ExportDeliveriesHandlers } from "../exports/pipeline/handlers.ts"
import { ExportRulesHandlers } from "../exports/rules/handlers.ts"
import { ConnectionsHandlers, ConnectPagesHandlers, HooksHandlers } from "../connections/handlers.ts"
import { ConnectionStagesHandlers } from "../connections/stages/handlers.ts"
import { ConnectionSyncHandlers } from "../ingestion/sync/handlers.ts"
import { CustomersHandlers } from "../identity/customers/handlers.ts"
import { DpaHandlers } from "../accounts/dpa/handlers.ts"
import { DpaHandoffHandlers, DpaHandoffPagesHandlers } from "../accounts/dpa/handoff/handlers.ts"
import { EventsHandlers } from "../ingestion/events/outcomes/handlers.ts"
import { PaymentsHandlers } from "../ingestion/events/payments/handlers.ts"
import { IdentityHandlers } from "../identity/handlers.ts"
import { IdentityRepairHandlers } from "../identity/repair/handlers.ts"
import { LinkTokensHandlers } from "../identity/link-tokens/handlers.ts"
import { McpOAuthHandlers } from "../accounts/mcp-oauth/handlers.ts"
import { McpHandlers } from "../mcp/handlers.ts"
import { OAuthHandlers } from "../accounts/oauth/handlers.ts"
import { OnboardingHandlers } from "../ops/onboarding/handlers.ts"
import { OpsHandlers } from "../ops/handlers.ts"
import { PartnerDataHandlers } from "../ingestion/partner/handlers.ts"
import { AudiencesHandlers } from "../exports/audiences/handlers.ts"
import { ExperimentsHandlers } from "../experiments/handlers.ts"
import { PasswordPagesHandlers, PasswordsHandlers, PeopleAdminHandlers } from "../accounts/people/handlers.ts"
import { RpcLayer } from "../rpc/server.ts"
import { MetricsAtStartLayer } from "./metrics.ts"
import { MetricsRoute } from "../ops/pages.ts"
import { MembersHandlers } from "../accounts/members/handlers.ts"
import { TenancyHandlers } from "../accounts/profiles/handlers.ts"
import { WorkspacesHandlers } from "../accounts/workspaces/handlers.ts"
import { TrackingSetupHandlers } from "../ingestion/tracking/setup/handlers.ts"
import { CollectorHandlers, TrackingHandlers } from "../ingestion/tracking/tracker/handlers.ts"
import { RetiredHandlers } from "../http/versioning/handlers.ts"
import { WebhookDeliveriesHandlers } from "../webhooks/delivery/handlers.ts"
import { WebhookSubscriptionsHandlers } from "../webhooks/subscriptions/handlers.ts"
import { ReportsHandlers } from "../analytics/reports/handlers.ts"
import { DeprecationLayer } from "../http/versioning/middleware.ts"
import { Api } from "./api.ts"
import { CalibrationsLayer, PortsLayer } from "./ports.ts"
// Inbox, email and calendar (issue 21, part 7).
import { CalendarHandlers } from "../connections/calendar/handlers.ts"
import { EmailHandlers } from "../messaging/email/handlers.ts"
import { InboxHandlers } from "../messaging/inbox/handlers.ts"
// Messaging sends (issue 21, part 5).
import { MessagesHandlers } from "../messaging/messages/handlers.ts"
// Chat surfaces (issue 21, part 6).
import { ChatAdsHandlers } from "../ads/chat-ads/handlers.ts"
import { ChatTemplatesHandlers } from "../messaging/templates/handlers.ts"
import { AuthenticationLayer } from "../http/auth.ts"
import { DocsRoutes } from "./docs.ts"
import { ConsoleRoutes } from "../console/routes.ts"
import { openApiJson } from "./openapi.ts"
import { PublishedDocument } from "../http/published-document.ts"
import { EnvelopeLayer } from "../http/envelope.ts"
import { RequestLogsHandlers } from "../ops/request-logs/handlers.ts"
import { RequestLogRecorderLayer } from "../ops/request-logs/recorder.ts"
import { IdempotencyLayer } from "../http/idempotency.ts"
import { SchemaErrorsLayer } from "../http/schema-errors.ts"
import { OptionalSandboxRoutes } from "../../sandbox/routes.ts"

export const ApiRoutes = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([
    OpsHandlers.pipe(Layer.provide(Layer.succeed(PublishedDocument)({ json: openApiJson }))),
    AdminHandlers,
    ConnectionsHandlers,
    ConnectionSyncHandlers,
    ConnectionStagesHandlers,
    CommerceLiveHandlers,
    CommerceCopyHandlers,
    ConversionSyncCatalogHandlers,
    ExportDestinationsHandlers,
    ExportRulesHandlers,
    ExportDeliveriesHandlers,
    PlatformSafeHandlers,
    DataSourcesHandlers,
    ConversionSyncWiringHandlers,
    ConnectPagesHandlers,
    HooksHandlers,
    TenancyHandlers,
    ApiKeysHandlers,
    MembersHandlers,
    WorkspacesHandlers,
    MeHandlers,
    SessionsHandlers,
    DpaHandlers,
    DpaHandoffHandlers,
    DpaHandoffPagesHandlers,
    DefinitionsHandlers,
    AttributionHandlers,
    RetiredHandlers,
    OAuthHandlers,
    McpOAuthHandlers,
    EventsHandlers,
    PaymentsHandlers,
    TrackingHandlers,
    TrackingSetupHandlers,
    CollectorHandlers,
    PartnerDataHandlers,
    AudiencesHandlers,
    CustomersHandlers,
    IdentityHandlers,
    IdentityRepairHandlers,
    LinkTokensHandlers,
    AnalyticsHandlers,
    CampaignsHandlers,
    InsightsHandlers,
    CreativeAnalysisHandlers,
    RecommendationsHandlers,
    PeopleAdminHandlers,
    PasswordsHandlers,
    PasswordPagesHandlers,
    OnboardingHandlers,
    // Ad actions (issue 19).
    AdActionsHandlers,
    WebhookSubscriptionsHandlers,
    WebhookDeliveriesHandlers,
    ReportsHandlers,
    // URL tags on ads (issue 19).
    UrlTagsHandlers,
    // Experiments (issue 32, decision 0122).
    ExperimentsHandlers,
    // A profile's recent requests (issue 33, decision 0130).
    RequestLogsHandlers,
  ]),
  // Inbox, email and calendar (issue 21, part 7).
  Layer.provide([InboxHandlers, EmailHandlers, CalendarHandlers]),
  // Messaging sends (issue 21, part 5).
  Layer.provide([MessagesHandlers]),
  // Chat surfaces (issue 21, part 6).
  Layer.provide([ChatAdsHandlers, ChatTemplatesHandlers]),
  // The agent surface (decision 0103).
  Layer.provide([McpHandlers]),
  Layer.provide([AuthenticationLayer, SchemaErrorsLayer, DeprecationLayer, IdempotencyLayer, CsrfLayer]),
  // What lower contexts call above them through ports (./ports.ts).
  Layer.provide(PortsLayer)
)

/** The envelope middleware with the request log's recorder (decision 0130), which it hands each profile's `/api/v1` request. */
const EnvelopeWithRequestLogLayer = EnvelopeLayer.pipe(Layer.provide(RequestLogRecorderLayer))

/**
 * The API, the docs pages, the console for people (`/` and `/console`, a client of the API), the
 * internal RPC surface at /rpc, the envelope around all of them (recording the request log),
 * the metrics a scraper sees from start-up (./metrics.ts),
 * and the sandbox providers under /sandbox/ when this process serves them.
 */
export const AppRoutes = Layer.mergeAll(ApiRoutes, DocsRoutes, ConsoleRoutes, RpcLayer.pipe(Layer.provide(CalibrationsLayer)), EnvelopeWithRequestLogLayer, OptionalSandboxRoutes, MetricsRoute, MetricsAtStartLayer)
