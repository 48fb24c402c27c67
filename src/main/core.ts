/**
 * Everything a running service needs below the HTTP layer, in start-up order:
 * configuration, database, migrations, then the cluster runner, rate-limit store, credentials.
 * The launch pipe (launch.ts) builds it for the entry points and the tests.
 */
import { ByteSize, Effect, Layer } from "effect"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import { ClusterLive } from "../../cluster/runner.ts"
import { AnalyticsRollups } from "../analytics/rollups/repo.ts"
import { AttributionWorker } from "../attribution/worker.ts"
import { ConnectionSessions } from "../connections/sessions.ts"
import { SyncWorker } from "../ingestion/sync/worker.ts"
import { CreativeAnalysisWorker } from "../analytics/creatives/worker.ts"
import { ExportPipeline, ExportWorkerLive } from "../exports/pipeline/service.ts"
import { PiiAccessLog } from "../kernel/audit/pii-access.ts"
import { CredentialStoreLive } from "../accounts/credentials/service.ts"
import { AppConfig } from "../platform/config.ts"
import { DatabaseLive } from "../platform/database.ts"
import { migrate } from "../platform/migrator.ts"
import { RateLimiterLive } from "../platform/rate-limit.ts"
import { SecretBox } from "../platform/secret-box.ts"
import { ProvidersLive } from "../connections/providers/layer.ts"
import { WebhookWorkerLive } from "../webhooks/delivery/service.ts"
import { ReportWorker } from "../analytics/reports/worker.ts"
import { QueueGaugesLive } from "../ops/service.ts"
import { CustomerListRefresh } from "../exports/audiences/worker.ts"
import { AttributionBackfillsLive } from "./ports.ts"

/** Applies pending migrations before anything else touches the database. */
export const MigrationsLive = Layer.effectDiscard(
  Effect.tap(migrate, (applied) =>
    applied.length === 0
      ? Effect.logDebug("database schema is current")
      : Effect.logInfo("applied migrations", applied.map(([id, name]) => `${id}_${name}`)))
)

/** The request-body cap every request reads while its body is consumed. */
const RequestLimitsLive = Layer.unwrap(
  AppConfig.useSync((settings) => Layer.succeed(HttpIncomingMessage.MaxBodySize)(ByteSize.bytes(settings.maxBodyBytes)))
)

/**
 * Works the provider sync queue in the background (decision 0058), on the same provider layer as
 * the routes and the entities (shared by reference: one HTTP client, one bucket per connection).
 */
const SyncLive = SyncWorker.layer.pipe(
  Layer.provide(ConnectionSessions.layer),
  Layer.provide([ProvidersLive, SecretBox.layer])
)

/** Works the conversion-export queue in the background (decision 0075), on the same provider layer. */
const ExportsLive = ExportWorkerLive.pipe(Layer.provideMerge(ExportPipeline.layer), Layer.provide([ProvidersLive, SecretBox.layer]))
/** Runs the reports' schedules in the background (decision 0086), on the same provider layer. */
const ReportsLive = ReportWorker.layer.pipe(Layer.provide([ProvidersLive, SecretBox.layer]))
/** Refreshes enabled customer-list audiences daily (decision 0100), on the same provider layer. */
const CustomerListRefreshLive = CustomerListRefresh.layer.pipe(Layer.provide([ProvidersLive, SecretBox.layer]))

/** Everything below the HTTP layer except the lifecycle, which the entry points build first to catch stop signals during start-up (launch.ts). */
export const CoreServicesLive = Layer.mergeAll(
  ClusterLive.pipe(Layer.provide(AttributionBackfillsLive)),
  // The provider ports for the routes (the HandOff entity gets the same layer, shared by reference).
  ProvidersLive,
  // Credits new conversions and runs queued replays in the background (decision 0030).
  AttributionWorker.layer,
  SyncLive,
  ExportsLive,
  ReportsLive,
  // Keeps the analytics rollups caught up with the facts (decision 0041).
  AnalyticsRollups.layer,
  // Works the creative analysis queue (decision 0071).
  CreativeAnalysisWorker.layer,
  // Reads the durable queues' backlog into the metrics (decision 0084).
  QueueGaugesLive,
  RateLimiterLive,
  CredentialStoreLive,
  PiiAccessLog.layer,
  RequestLimitsLive,
  SecretBox.layer,
  // Fans the outbox out to webhook subscriptions and works the delivery ladder (decision 0078).
  WebhookWorkerLive.pipe(Layer.provide(SecretBox.layer)),
  CustomerListRefreshLive
).pipe(
  Layer.provideMerge(MigrationsLive),
  Layer.provideMerge(DatabaseLive)
)
