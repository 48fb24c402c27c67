/**
 * The HTTP application: the API's routes with their handlers and middleware, the docs
 * pages and the global envelope middleware, as one layer over an HttpRouter. Each handler
 * group brings the services it calls; a service several groups share is built once (layers
 * are memoised by reference within one build). The core services come from below (core.ts).
 */
import { Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminHandlers } from "../admin/handlers.ts"
import { AdActionsHandlers } from "../ads/actions/handlers.ts"
import { UrlTagsHandlers } from "../ads/url-tags/handlers.ts"
import { AnalyticsHandlers } from "../analytics/overview/handlers.ts"
import { CampaignsHandlers } from "../analytics/campaigns/handlers.ts"
import { InsightsHandlers } from "../analytics/insights/handlers.ts"
import { CreativeAnalysisHandlers } from "../creatives/handlers.ts"
import { RecommendationsHandlers } from "../recommendations/handlers.ts"
import { DefinitionsHandlers } from "../attribution/definitions/handlers.ts"
import { AttributionHandlers } from "../attribution/recompute/handlers.ts"
import { ApiKeysHandlers } from "../auth/api-keys/handlers.ts"
import { MeHandlers } from "../auth/me/handlers.ts"
import { CsrfLayer, SessionsHandlers } from "../auth/sessions/handlers.ts"
import { CommerceLiveHandlers } from "../commerce/live/handlers.ts"
import { CommerceCopyHandlers } from "../commerce/orders/handlers.ts"
import { ConversionSyncCatalogHandlers } from "../exports/catalog/handlers.ts"
import { ExportDestinationsHandlers } from "../exports/destinations/handlers.ts"
import { PlatformSafeHandlers } from "../exports/platform-safe/handlers.ts"
import { DataSourcesHandlers } from "../exports/data-sources/handlers.ts"
import { ConversionSyncWiringHandlers } from "../exports/wiring/handlers.ts"
import { ExportDeliveriesHandlers } from "../exports/pipeline/handlers.ts"
import { ExportRulesHandlers } from "../exports/rules/handlers.ts"
import { ConnectionsHandlers, ConnectPagesHandlers, HooksHandlers } from "../connections/handlers.ts"
import { ConnectionStagesHandlers } from "../connections/stages/handlers.ts"
import { ConnectionSyncHandlers } from "../connections/sync/handlers.ts"
import { CustomersHandlers } from "../customers/handlers.ts"
import { DpaHandlers } from "../dpa/handlers.ts"
import { DpaHandoffHandlers, DpaHandoffPagesHandlers } from "../dpa/handoff/handlers.ts"
import { EventsHandlers } from "../events/outcomes/handlers.ts"
import { PaymentsHandlers } from "../events/payments/handlers.ts"
import { IdentityHandlers } from "../identity/handlers.ts"
import { IdentityRepairHandlers } from "../identity-repair/handlers.ts"
import { LinkTokensHandlers } from "../link-tokens/handlers.ts"
import { McpOAuthHandlers } from "../mcp-oauth/handlers.ts"
import { McpHandlers } from "../mcp/handlers.ts"
import { OAuthHandlers } from "../oauth/handlers.ts"
import { OnboardingHandlers } from "../onboarding/handlers.ts"
import { OpsHandlers } from "../ops/handlers.ts"
import { PartnerDataHandlers } from "../partner/handlers.ts"
import { AudiencesHandlers } from "../audiences/handlers.ts"
import { PasswordPagesHandlers, PasswordsHandlers, PeopleAdminHandlers } from "../people/handlers.ts"
import { RpcLive } from "../rpc/server.ts"
import { MetricsAtStart } from "./metrics.ts"
import { MetricsRoute } from "../ops/pages.ts"
import { MembersHandlers } from "../tenancy/members/handlers.ts"
import { TenancyHandlers } from "../tenancy/profiles/handlers.ts"
import { WorkspacesHandlers } from "../tenancy/workspaces/handlers.ts"
import { TrackingSetupHandlers } from "../tracking/setup/handlers.ts"
import { CollectorHandlers, TrackingHandlers } from "../tracking/tracker/handlers.ts"
import { RetiredHandlers } from "../versioning/handlers.ts"
import { WebhookDeliveriesHandlers } from "../webhooks/delivery/handlers.ts"
import { WebhookSubscriptionsHandlers } from "../webhooks/subscriptions/handlers.ts"
import { ReportsHandlers } from "../reports/handlers.ts"
import { DeprecationLayer } from "../versioning/middleware.ts"
import { Api } from "../http/api.ts"
// Inbox, email and calendar (issue 21, part 7).
import { CalendarHandlers } from "../calendar/handlers.ts"
import { EmailHandlers } from "../email/handlers.ts"
import { InboxHandlers } from "../inbox/handlers.ts"
// Messaging sends (issue 21, part 5).
import { MessagesHandlers } from "../messages/handlers.ts"
// Chat surfaces (issue 21, part 6).
import { ChatAdsHandlers } from "../chat-surfaces/ads/handlers.ts"
import { ChatTemplatesHandlers } from "../chat-surfaces/templates/handlers.ts"
import { AuthenticationLayer } from "../http/auth.ts"
import { DocsRoutes } from "../http/docs.ts"
import { EnvelopeLayer } from "../http/envelope.ts"
import { IdempotencyLayer } from "../http/idempotency.ts"
import { SchemaErrorsLayer } from "../http/schema-errors.ts"
import { SandboxRoutesIfServed } from "../providers/sandbox/routes.ts"

export const ApiRoutes = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([
    OpsHandlers,
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
  ]),
  // Inbox, email and calendar (issue 21, part 7).
  Layer.provide([InboxHandlers, EmailHandlers, CalendarHandlers]),
  // Messaging sends (issue 21, part 5).
  Layer.provide([MessagesHandlers]),
  // Chat surfaces (issue 21, part 6).
  Layer.provide([ChatAdsHandlers, ChatTemplatesHandlers]),
  // The agent surface (decision 0103).
  Layer.provide([McpHandlers]),
  Layer.provide([AuthenticationLayer, SchemaErrorsLayer, DeprecationLayer, IdempotencyLayer, CsrfLayer])
)

/**
 * The API, the docs pages, the internal RPC surface at /rpc, the envelope around all of them,
 * the metrics a scraper sees from start-up (./metrics.ts),
 * and the sandbox providers under /sandbox/ when this process serves them.
 */
export const HttpApp = Layer.mergeAll(ApiRoutes, DocsRoutes, RpcLive, EnvelopeLayer, SandboxRoutesIfServed, MetricsRoute, MetricsAtStart)
