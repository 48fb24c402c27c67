/**
 * The nightly sync (decision 0058): at 03:00 UTC the cluster runs one job (whichever runner
 * owns its shard, once per night however many runners there are) that queues a structure
 * sync for every live ad-platform connection and the recent days of insights for profiles
 * with the attribution add-on on. The worker works the queue.
 */
import { Cron, Layer } from "effect"
import { ClusterCron } from "effect/cluster"
import { SyncWorker } from "./worker.ts"

export const NIGHTLY_SYNC_CRON = "0 3 * * *"

export const NightlySyncLive = Layer.unwrap(
  SyncWorker.useSync((worker) =>
    ClusterCron.make({
      name: "connections-nightly-sync",
      cron: Cron.parseUnsafe(NIGHTLY_SYNC_CRON),
      execute: worker.enqueueNightly,
      // A night missed while no runner was up is made up at start-up only within a few hours.
      skipIfOlderThan: "6 hours"
    })
  )
)
