/**
 * The Experiment entity's protocol (decision 0122): one instance per experiment (`profile:id`).
 * Its messages run one at a time, so a start, a stop and a results read of one experiment are
 * ordered: a read never sees half a transition, and two stops cannot both succeed. Not
 * persisted: a message lost with its runner was never answered, and the client retries it (the
 * transitions are conditional on the row's version). The behaviour is registered by
 * cluster/Experiment.ts.
 */
import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { DatabaseUnavailable, InvalidState, NotFound } from "../../schema/errors.ts"
import { Experiment as ExperimentWire, ExperimentResults, StopReason } from "../../schema/experiments.ts"

export const ExperimentError = Schema.Union([NotFound, InvalidState, DatabaseUnavailable])
export type ExperimentError = typeof ExperimentError.Type

const Address = { profile_id: Schema.String, experiment_id: Schema.String }

/** The experiment, completed first when it is running and its window is over. */
export const Read = Rpc.make("Read", { payload: Address, success: ExperimentWire, error: ExperimentError })
/** The profile's context rides along: a switchback keeps it for its later days' ad actions. */
export const Start = Rpc.make("Start", {
  payload: { ...Address, workspace_id: Schema.String, attribution_enabled: Schema.Boolean },
  success: ExperimentWire,
  error: ExperimentError
})
export const Stop = Rpc.make("Stop", {
  payload: { ...Address, reason: StopReason, note: Schema.NullOr(Schema.String) },
  success: ExperimentWire,
  error: ExperimentError
})
export const Results = Rpc.make("Results", { payload: Address, success: ExperimentResults, error: ExperimentError })

/** A switchback's day tick (decision 0124): completes it when its window is over, applies today's schedule day or the restore, once each. */
export const Advance = Rpc.make("Advance", { payload: Address, success: Schema.Void, error: ExperimentError })

export const Experiment = Entity.make("Experiment", [Read, Start, Stop, Results, Advance])

/** The entity id of an experiment. */
export const experimentEntityId = (profileId: string, experimentId: string) => `${profileId}:${experimentId}`
