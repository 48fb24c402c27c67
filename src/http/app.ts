/**
 * The HTTP application: the API's routes with their handlers and middleware, the docs
 * pages and the global envelope middleware, as one layer over an HttpRouter.
 */
import { Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminHandlers } from "../admin/handlers.ts"
import { AdminService } from "../admin/service.ts"
import { DefinitionsHandlers } from "../attribution/definitions-handlers.ts"
import { Definitions } from "../attribution/definitions-service.ts"
import { AttributionHandlers } from "../attribution/handlers.ts"
import { AttributionJobs } from "../attribution/service.ts"
import { ApiKeysHandlers } from "../auth/api-keys-handlers.ts"
import { ApiKeysService } from "../auth/api-keys-service.ts"
import { MeHandlers } from "../auth/me-handlers.ts"
import { MeService } from "../auth/me-service.ts"
import { CsrfLayer, SessionsHandlers } from "../auth/sessions-handlers.ts"
import { Sessions } from "../auth/sessions-service.ts"
import { ConnectionsHandlers } from "../connections/handlers.ts"
import { ConnectionsRepo } from "../connections/repo.ts"
import { DpaHandlers } from "../dpa/handlers.ts"
import { DpaService } from "../dpa/service.ts"
import { EventsHandlers } from "../events/handlers.ts"
import { EventsService } from "../events/service.ts"
import { PaymentsHandlers } from "../events/payments-handlers.ts"
import { PaymentsService } from "../events/payments-service.ts"
import { OAuthAuthorize } from "../oauth/authorize-service.ts"
import { McpOAuthHandlers } from "../mcp-oauth/handlers.ts"
import { McpOAuthService } from "../mcp-oauth/service.ts"
import { OAuthHandlers } from "../oauth/handlers.ts"
import { OAuthService } from "../oauth/service.ts"
import { OpsHandlers } from "../ops/handlers.ts"
import { PartnerDataHandlers } from "../partner/handlers.ts"
import { CustomersHandlers } from "../customers/handlers.ts"
import { CustomersService } from "../customers/service.ts"
import { PartnerData } from "../partner/service.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { TenancyHandlers } from "../tenancy/handlers.ts"
import { CollectorHandlers, TrackingHandlers } from "../tracking/handlers.ts"
import { TrackingDiagnostics } from "../tracking/diagnostics-service.ts"
import { TrackingDomains } from "../tracking/domains-service.ts"
import { TrackingInstallers } from "../tracking/installers-service.ts"
import { TrackingSetupHandlers } from "../tracking/setup-handlers.ts"
import { TrackingService } from "../tracking/service.ts"
import { Provisioning } from "../tenancy/service.ts"
import { MembersHandlers } from "../tenancy/members-handlers.ts"
import { Members } from "../tenancy/members-service.ts"
import { WorkspacesHandlers } from "../tenancy/workspaces-handlers.ts"
import { Workspaces } from "../tenancy/workspaces-service.ts"
import { RpcLive } from "../rpc/server.ts"
import { Health } from "../ops/service.ts"
import { RetiredHandlers } from "../versioning/handlers.ts"
import { DeprecationLayer } from "../versioning/middleware.ts"
import { Api } from "./api.ts"
import { AuthenticationLayer } from "./auth.ts"
import { DocsRoutes } from "./docs.ts"
import { EnvelopeLayer } from "./envelope.ts"
import { IdempotencyLayer } from "./idempotency.ts"
import { SchemaErrorsLayer } from "./schema-errors.ts"

export const ApiRoutes = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([OpsHandlers, AdminHandlers, ConnectionsHandlers, TenancyHandlers, ApiKeysHandlers, MembersHandlers, WorkspacesHandlers, MeHandlers, SessionsHandlers, DpaHandlers, DefinitionsHandlers, AttributionHandlers, RetiredHandlers, OAuthHandlers, McpOAuthHandlers, EventsHandlers, PaymentsHandlers, TrackingHandlers, TrackingSetupHandlers, CollectorHandlers, PartnerDataHandlers, CustomersHandlers]),
  Layer.provide([AuthenticationLayer, SchemaErrorsLayer, DeprecationLayer, IdempotencyLayer, CsrfLayer]),
  Layer.provide([Health.layer, AdminService.layer, ConnectionsRepo.layer, ProfileAccess.layer, Provisioning.layer, ApiKeysService.layer, Members.layer, Workspaces.layer, MeService.layer, Sessions.layer, DpaService.layer, Definitions.layer, AttributionJobs.layer, OAuthService.layer, OAuthAuthorize.layer, McpOAuthService.layer, EventsService.layer, PaymentsService.layer, TrackingService.layer, TrackingInstallers.layer, TrackingDomains.layer, TrackingDiagnostics.layer, PartnerData.layer, CustomersService.layer])
)

/** The API, the docs pages, the internal RPC surface at /rpc, and the envelope around all of them. */
export const HttpApp = Layer.mergeAll(ApiRoutes, DocsRoutes, RpcLive, EnvelopeLayer)
