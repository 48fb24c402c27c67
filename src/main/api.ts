/**
 * The service's HTTP API: one HttpApi assembled from the domains' groups. Groups under
 * `/api/v1` carry that prefix themselves; `ops` (health, readiness) and, later, `/oauth/*`
 * live outside it.
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { AdminApi } from "../accounts/admin/api.ts"
import { AdActionsApi } from "../ads/actions/api.ts"
import { UrlTagsApi } from "../ads/url-tags/api.ts"
import { AnalyticsApi } from "../analytics/overview/api.ts"
import { CampaignsApi } from "../analytics/campaigns/api.ts"
import { InsightsApi } from "../analytics/insights/api.ts"
import { CreativeAnalysisApi } from "../analytics/creatives/api.ts"
import { RecommendationsApi } from "../ads/recommendations/api.ts"
import { AttributionApi } from "../attribution/recompute/api.ts"
import { DefinitionsApi } from "../attribution/definitions/api.ts"
import { ApiKeysApi } from "../accounts/api-keys/api.ts"
import { MeApi } from "../accounts/me/api.ts"
import { OnboardingApi } from "../ops/onboarding/api.ts"
import { PasswordPagesApi, PasswordsApi, PeopleAdminApi } from "../accounts/people/api.ts"
import { SessionsApi } from "../accounts/sessions/api.ts"
import { ConnectPagesApi, ConnectionsApi, HooksApi } from "../connections/api.ts"
import { ConnectionStagesApi } from "../connections/stages/api.ts"
import { ConnectionSyncApi } from "../ingestion/sync/api.ts"
import { CommerceLiveApi } from "../ingestion/commerce/live/api.ts"
import { CommerceCopyApi } from "../ingestion/commerce/orders/api.ts"
import { ConversionSyncCatalogApi } from "../exports/catalog/api.ts"
import { ExportDestinationsApi } from "../exports/destinations/api.ts"
import { PlatformSafeApi } from "../exports/platform-safe/api.ts"
import { DataSourcesApi } from "../exports/data-sources/api.ts"
import { ConversionSyncWiringApi } from "../exports/wiring/api.ts"
import { ExportDeliveriesApi } from "../exports/pipeline/api.ts"
import { ExportRulesApi } from "../exports/rules/api.ts"
import { WebhookDeliveriesApi } from "../webhooks/delivery/api.ts"
import { RequestLogsApi } from "../ops/request-logs/api.ts"
import { WebhookSubscriptionsApi } from "../webhooks/subscriptions/api.ts"
import { DpaApi } from "../accounts/dpa/api.ts"
import { DpaHandoffApi, DpaHandoffPagesApi } from "../accounts/dpa/handoff/api.ts"
import { EventsApi } from "../ingestion/events/outcomes/api.ts"
import { PaymentsApi } from "../ingestion/events/payments/api.ts"
import { McpOAuthApi } from "../accounts/mcp-oauth/api.ts"
import { McpApi } from "../mcp/api.ts"
import { OAuthApi } from "../accounts/oauth/api.ts"
import { OpsApi } from "../ops/api.ts"
import { PartnerDataApi } from "../ingestion/partner/api.ts"
import { AudiencesApi } from "../exports/audiences/api.ts"
import { ExperimentsApi } from "../experiments/api.ts"
import { LinkTokensApi } from "../identity/link-tokens/api.ts"
import { CustomersApi } from "../identity/customers/api.ts"
import { IdentityApi } from "../identity/api.ts"
import { IdentityRepairApi } from "../identity/repair/api.ts"
import { TenancyApi } from "../accounts/profiles/api.ts"
import { CollectorApi, TrackingApi } from "../ingestion/tracking/tracker/api.ts"
import { TrackingSetupApi } from "../ingestion/tracking/setup/api.ts"
import { MembersApi } from "../accounts/members/api.ts"
import { WorkspacesApi } from "../accounts/workspaces/api.ts"
import { RetiredApi } from "../http/versioning/api.ts"
import { PAYLOAD_PARSE_OPTIONS, withApiMiddleware } from "../http/group-api.ts"
// Inbox, email and calendar (issue 21, part 7).
import { CalendarApi } from "../connections/calendar/api.ts"
import { EmailApi } from "../messaging/email/api.ts"
import { InboxApi } from "../messaging/inbox/api.ts"
import { ReportsApi } from "../analytics/reports/api.ts"
// Messaging sends (issue 21, part 5).
import { MessagesApi } from "../messaging/messages/api.ts"
// Chat surfaces (issue 21, part 6).
import { ChatAdsApi } from "../ads/chat-ads/api.ts"
import { ChatTemplatesApi } from "../messaging/templates/api.ts"
import { securitySchemes } from "../http/policy.ts"
import { VERSION } from "../platform/version.ts"

export const Api = HttpApi.make("svc")
  .add(OpsApi)
  .add(AdminApi)
  .add(ConnectionsApi)
  .add(ConnectionSyncApi)
  .add(ConnectionStagesApi)
  .add(CommerceLiveApi)
  .add(CommerceCopyApi)
  .add(ConversionSyncCatalogApi)
  .add(ExportDestinationsApi)
  .add(ExportRulesApi)
  .add(ExportDeliveriesApi)
  .add(PlatformSafeApi)
  .add(DataSourcesApi)
  .add(ConversionSyncWiringApi)
  .add(TenancyApi)
  .add(ApiKeysApi)
  .add(MembersApi)
  .add(WorkspacesApi)
  .add(MeApi)
  .add(SessionsApi)
  .add(PasswordsApi)
  .add(PeopleAdminApi)
  .add(OnboardingApi)
  .add(DpaApi)
  // DPA hand-off to a profile's own owner: the app's route (decision 0098).
  .add(DpaHandoffApi)
  .add(TrackingApi)
  .add(TrackingSetupApi)
  .add(RetiredApi)
  .add(DefinitionsApi)
  .add(AttributionApi)
  .add(EventsApi)
  .add(PaymentsApi)
  .add(PartnerDataApi)
  .add(AudiencesApi)
  .add(LinkTokensApi)
  .add(CustomersApi)
  .add(IdentityApi)
  .add(IdentityRepairApi)
  .add(AnalyticsApi)
  .add(CampaignsApi)
  .add(InsightsApi)
  .add(CreativeAnalysisApi)
  .add(RecommendationsApi)
  // Ad actions (issue 19).
  .add(AdActionsApi)
  .add(InboxApi)
  .add(EmailApi)
  .add(CalendarApi)
  .add(WebhookSubscriptionsApi)
  .add(WebhookDeliveriesApi)
  .add(ReportsApi)
  // URL tags on ads (issue 19).
  .add(UrlTagsApi)
  // Messaging sends (issue 21, part 5).
  .add(MessagesApi)
  // Chat surfaces (issue 21, part 6).
  .add(ChatAdsApi)
  .add(ChatTemplatesApi)
  // Experiments (issue 32, decision 0122).
  .add(ExperimentsApi)
  // A profile's recent requests (issue 33, decision 0130).
  .add(RequestLogsApi)
  // Every group above runs the authenticated API's middleware (src/http/group-api.ts).
  .pipe(withApiMiddleware)
  // Added after the middleware: /oauth/* answers only the OAuth error format (decision 0016).
  .add(OAuthApi)
  // The agent OAuth surface answers the OAuth error format or HTML too (decision 0023).
  .add(McpOAuthApi)
  // The set-password page of a one-time link: HTML, public (decision 0053).
  .add(PasswordPagesApi)
  // The DPA hand-off page: HTML; reads the session cookie itself (decision 0098).
  .add(DpaHandoffPagesApi)
  // The web tracker's collector: public, the tracking key in the body (decision 0031).
  .add(CollectorApi)
  // A connect hand-off's browser side (the /h link, the provider's redirect) and the providers'
  // signed callbacks: public, the hand-off's state or the provider's signature is the credential (decision 0057).
  .add(ConnectPagesApi)
  .add(HooksApi)
  // The agent surface (MCP): JSON-RPC errors and its own token check with a WWW-Authenticate challenge (decision 0103).
  .add(McpApi)
  // A body key no schema names is refused (400 naming it), as the published description's
  // `additionalProperties: false` says; objects that take other keys say so in their schema
  // (`openObject`, decision 0048). Bodies only: query strings and headers keep their defaults.
  .annotate(HttpApi.PayloadParseOptions, PAYLOAD_PARSE_OPTIONS)
  .annotate(OpenApi.Title, "Attribution Service API")
  .annotate(OpenApi.Version, VERSION)
  .annotate(
    OpenApi.Description,
    "Marketing attribution: touches, outcomes, credit models, analytics, identity, conversion export. " +
      "Errors use the envelope {\"error\":{code,message,status,request_id}}; see /docs/errors."
  )
  .annotate(OpenApi.Transform, (spec) => ({
    ...spec,
    components: { ...spec.components, securitySchemes: { ...spec.components.securitySchemes, ...securitySchemes } }
  }))
