/**
 * The nightly sync (decision 0058): at 03:00 UTC the cluster runs one job (whichever runner
 * owns its shard: once a night however many runners there are) that queues a structure sync for
 * every live ad-platform connection and the recent days of insights for profiles with the
 * attribution add-on on. The sync worker of each runner works the queue.
 */
import { Cron, Effect, Layer } from "effect"
import { ClusterCron } from "effect/cluster"
import { SyncJobsRepo } from "./repo.ts"
import { SyncWorkerSettings } from "./worker.ts"

export const NIGHTLY_SYNC_CRON = "0 3 * * *"

export const NightlySyncLayer = ClusterCron.make({
  name: "connections-nightly-sync",
  cron: Cron.parseUnsafe(NIGHTLY_SYNC_CRON),
  execute: Effect.gen(function*() {
    const jobs = yield* SyncJobsRepo
    const settings = yield* SyncWorkerSettings
    const queued = yield* jobs.enqueueNightly(settings.recentDays)
    yield* Effect.logInfo("nightly sync queued", queued)
  }).pipe(Effect.withSpan("NightlySync.run")),
  // A night missed while no runner was up is made up at start-up only within a few hours.
  skipIfOlderThan: "6 hours"
}).pipe(Layer.provide(SyncJobsRepo.layer))
