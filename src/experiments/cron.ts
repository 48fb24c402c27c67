/**
 * The experiments' tick (decision 0124): every 10 minutes the cluster runs one job (whichever
 * runner owns its shard: once however many runners there are) that sends `Advance` to each
 * switchback still running or not yet restored, and to each experiment whose window is over (its
 * entity completes it: the event and the calibration do not wait for someone to read it). Each experiment's entity applies today's schedule
 * day or the restore once (recorded in its execution), so a repeated or overlapping tick changes
 * nothing: the first tick after the profile's local midnight (decision 0135) moves the target within ten minutes.
 */
import { Cron, Effect, Layer } from "effect"
import { ClusterCron } from "effect/cluster"
import { routeProfileCall } from "../platform/entity-calls.ts"
import { Experiment, experimentEntityId } from "./entity.ts"
import { ExperimentsRepo } from "./repo.ts"

export const SWITCHBACK_DAYS_CRON = "*/10 * * * *"

/** One pass: each due switchback advanced through its entity; one failing does not stop the others. */
export const advanceSwitchbacks = Effect.gen(function*() {
  const repo = yield* ExperimentsRepo
  const entities = yield* Experiment.client
  const due = yield* repo.dueSwitchbacks()
  yield* Effect.forEach(due, (row) =>
    routeProfileCall(entities(experimentEntityId(row.profile_id, row.id)).Advance({ profile_id: row.profile_id, experiment_id: row.id }), "experiment_timeout").pipe(
      Effect.catch((error) => Effect.logWarning("switchback day tick failed", { experimentId: row.id, error: error._tag }))
    ), { discard: true })
  return due.length
}).pipe(Effect.withSpan("SwitchbackDays.run"))

export const SwitchbackDaysLayer = ClusterCron.make({
  name: "experiments-switchback-days",
  cron: Cron.parseUnsafe(SWITCHBACK_DAYS_CRON),
  execute: Effect.asVoid(advanceSwitchbacks),
  skipIfOlderThan: "1 hour"
}).pipe(Layer.provide(ExperimentsRepo.layer))
