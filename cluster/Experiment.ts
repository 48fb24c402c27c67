/**
 * The Experiment entity: one instance per experiment; its start, stop, read and results messages
 * run one at a time (decision 0122). Not persisted: see src/experiments/entity.ts.
 */
import { Effect } from "effect"
import { ExperimentEngine } from "../src/experiments/engine.ts"
import { Experiment } from "../src/experiments/entity.ts"

export const ExperimentLayer = Experiment.toLayer(
  Effect.gen(function*() {
    const engine = yield* ExperimentEngine
    return Experiment.of({
      Read: ({ payload }) => engine.read(payload.profile_id, payload.experiment_id),
      Start: ({ payload }) =>
        engine.start(payload.profile_id, payload.experiment_id, { workspaceId: payload.workspace_id, attributionEnabled: payload.attribution_enabled }),
      Stop: ({ payload }) => engine.stop(payload.profile_id, payload.experiment_id, payload.reason, payload.note),
      Results: ({ payload }) => engine.results(payload.profile_id, payload.experiment_id),
      Advance: ({ payload }) => engine.advance(payload.profile_id, payload.experiment_id)
    })
  })
)
