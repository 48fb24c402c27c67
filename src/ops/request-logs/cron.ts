/**
 * The request log's retention (decision 0130): every hour the cluster runs one job (once however
 * many runners there are) that deletes the entries older than 7 days, in bounded batches along
 * `request_logs_created_at`. A missed hour is caught up by the next (the delete is by age).
 */
import { Cron, Effect, Layer } from "effect"
import { ClusterCron } from "effect/cluster"
import { RequestLogs } from "./service.ts"

export const REQUEST_LOG_RETENTION_CRON = "17 * * * *"

export const RequestLogRetentionLayer = ClusterCron.make({
  name: "request-log-retention",
  cron: Cron.parseUnsafe(REQUEST_LOG_RETENTION_CRON),
  execute: RequestLogs.use((logs) => logs.purgeExpired).pipe(
    Effect.tap((purged) => purged > 0 ? Effect.logInfo("purged request log entries past retention", { purged }) : Effect.void),
    Effect.catch((error) => Effect.logWarning("request log retention failed; the next hour tries again", error)),
    Effect.asVoid
  ),
  skipIfOlderThan: "1 hour"
}).pipe(Layer.provide(RequestLogs.layer))
