/**
 * Everything a running service needs below the HTTP layer, in start-up order:
 * configuration, database, migrations, then the cluster runner, rate-limit store, credentials.
 * The launch pipe (launch.ts) builds it for the entry points and the tests.
 */
import { ByteSize, type Context, Effect, Layer } from "effect"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import { ClusterLayer } from "../../cluster/runner.ts"
import { AnalyticsRollups } from "../analytics/rollups/repo.ts"
import { AttributionWorker, AttributionWorkerSettings } from "../attribution/worker.ts"
import { ConnectionSessions } from "../connections/sessions.ts"
import { SyncWorker, SyncWorkerSettings } from "../ingestion/sync/worker.ts"
import { CreativeAnalysisWorker, CreativeAnalysisWorkerSettings } from "../analytics/creatives/worker.ts"
import { ExportPipeline, ExportWorkerLayer, ExportWorkerSettings } from "../exports/pipeline/service.ts"
import { PiiAccessLog } from "../kernel/audit/pii-access.ts"
import { CredentialStoreLayer } from "../accounts/credentials/service.ts"
import { AppConfig } from "../platform/config.ts"
import { DatabaseLayer } from "../platform/database.ts"
import { RunnerLiveness } from "../platform/liveness.ts"
import { migrate } from "../platform/migrator.ts"
import { RateLimiterLayer } from "../platform/rate-limit.ts"
import { SecretBox } from "../platform/secret-box.ts"
import { ProvidersLayer } from "../connections/providers/layer.ts"
import { WebhookSettings, WebhookWorkerLayer } from "../webhooks/delivery/service.ts"
import { PausedBacklogLayer } from "../webhooks/subscriptions/worker.ts"
import { ReportWorker, ReportWorkerSettings } from "../analytics/reports/worker.ts"
import { QueueGaugesLayer } from "../ops/service.ts"
import { CustomerListRefresh, CustomerListRefreshSettings } from "../exports/audiences/worker.ts"
import { AttributionBackfillsLayer, AudienceHoldoutsLayer } from "./ports.ts"

/** Applies pending migrations before anything else touches the database. */
export const MigrationsLayer = Layer.effectDiscard(
  Effect.tap(migrate, (applied) =>
    applied.length === 0
      ? Effect.logDebug("database schema is current")
      : Effect.logInfo("applied migrations", applied.map(([id, name]) => `${id}_${name}`)))
)

/** The request-body cap every request reads while its body is consumed. */
const RequestLimitsLayer = Layer.unwrap(
  AppConfig.useSync((settings) => Layer.succeed(HttpIncomingMessage.MaxBodySize)(ByteSize.bytes(settings.maxBodyBytes)))
)

/**
 * Works the provider sync queue in the background (decision 0058), on the same provider layer as
 * the routes and the entities (shared by reference: one HTTP client, one bucket per connection).
 */
const SyncLayer = SyncWorker.layer.pipe(
  Layer.provide(ConnectionSessions.layer),
  Layer.provide([ProvidersLayer, SecretBox.layer])
)

/** Works the conversion-export queue in the background (decision 0075), on the same provider layer. */
const ExportsLayer = ExportWorkerLayer.pipe(Layer.provideMerge(ExportPipeline.layer), Layer.provide([ProvidersLayer, SecretBox.layer]))
/** Runs the reports' schedules in the background (decision 0086), on the same provider layer. */
const ReportsLayer = ReportWorker.layer.pipe(Layer.provide([ProvidersLayer, SecretBox.layer]))
/** Refreshes enabled customer-list audiences daily (decision 0100), on the same provider layer. */
const CustomerListRefreshLayer = CustomerListRefresh.layer.pipe(Layer.provide(AudienceHoldoutsLayer), Layer.provide([ProvidersLayer, SecretBox.layer]))

/** The durable queues' workers and the services they share with the routes and tests (a drain, a run-once). */
const QueueWorkersLayer = Layer.mergeAll(
  // Credits new conversions and runs queued replays in the background (decision 0030).
  AttributionWorker.layer,
  SyncLayer,
  ExportsLayer,
  ReportsLayer,
  // Works the creative analysis queue (decision 0071).
  CreativeAnalysisWorker.layer,
  // Fans the outbox out to webhook subscriptions and works the delivery ladder (decision 0078).
  WebhookWorkerLayer.pipe(Layer.provide(SecretBox.layer)),
  CustomerListRefreshLayer
)

/** Each worker's own switch turned off, the rest of its settings as they are. */
const switchedOff = <S extends { readonly enabled: boolean }>(settings: Context.Reference<S>) =>
  Layer.effect(settings)(Effect.gen(function*() {
    const current = yield* settings
    return { ...current, enabled: false }
  }))

/**
 * `SVC_WORKERS=off` (decision 0139): the services stay (a route may still ask a drain of them),
 * but no worker polls or works a queue in this process; processes with workers on, sharing the
 * database, do. Every claim goes through the database, so any number of those may run.
 */
const WorkersLayer = Layer.unwrap(AppConfig.useSync((settings) =>
  settings.workers === false
    ? QueueWorkersLayer.pipe(Layer.provide(Layer.mergeAll(
      switchedOff(AttributionWorkerSettings),
      switchedOff(SyncWorkerSettings),
      switchedOff(ExportWorkerSettings),
      switchedOff(ReportWorkerSettings),
      switchedOff(CreativeAnalysisWorkerSettings),
      switchedOff(WebhookSettings),
      switchedOff(CustomerListRefreshSettings)
    )))
    : Layer.merge(
      QueueWorkersLayer,
      // Drops what a paused subscription has held past 72 hours (decision 0120).
      PausedBacklogLayer.pipe(Layer.provide(SecretBox.layer))
    )
))

/** Everything below the HTTP layer except the lifecycle, which the entry points build first to catch stop signals during start-up (launch.ts). */
export const CoreServicesLayer = Layer.mergeAll(
  ClusterLayer.pipe(Layer.provide(AttributionBackfillsLayer)),
  // The provider ports for the routes (the HandOff entity gets the same layer, shared by reference).
  ProvidersLayer,
  WorkersLayer,
  // Keeps the analytics rollups caught up with the facts (decision 0041).
  AnalyticsRollups.layer,
  // Reads the durable queues' backlog into the metrics (decision 0084).
  QueueGaugesLayer,
  RateLimiterLayer,
  CredentialStoreLayer,
  PiiAccessLog.layer,
  RequestLimitsLayer,
  SecretBox.layer
).pipe(
  // Leases name this process, so that its work is taken over at once when it dies (decision 0150).
  Layer.provideMerge(RunnerLiveness.layer),
  Layer.provideMerge(MigrationsLayer),
  Layer.provideMerge(DatabaseLayer)
)
