/**
 * Partition maintenance's schedule (decision 0133): every hour the cluster runs one pass (once
 * however many runners there are; the per-table advisory lock also keeps a second pass, from any
 * other caller, from doing the same work at the same time). Hourly though the months change
 * monthly: a missed or failed pass is caught up within the hour, and two months stay ahead.
 */
import { Cron, Effect, Layer } from "effect"
import { ClusterCron } from "effect/cluster"
import { PartitionMaintenance } from "./service.ts"

export const PARTITION_MAINTENANCE_CRON = "17 * * * *"

export const PartitionMaintenanceLayer = ClusterCron.make({
  name: "partition-maintenance",
  cron: Cron.parseUnsafe(PARTITION_MAINTENANCE_CRON),
  execute: PartitionMaintenance.use((maintenance) => maintenance.run()).pipe(
    Effect.tap((passes) => {
      const skipped = passes.filter((pass) => pass.skipped).map((pass) => pass.table)
      return skipped.length === 0 ? Effect.void : Effect.logDebug("partition maintenance skipped tables another runner holds", { skipped })
    }),
    Effect.catch((error) => Effect.logWarning("partition maintenance failed; the next hour tries again", error)),
    Effect.asVoid
  ),
  skipIfOlderThan: "1 hour"
}).pipe(Layer.provide(PartitionMaintenance.layer))
