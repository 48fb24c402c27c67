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
export const Start = Rpc.make("Start", { payload: Address, success: ExperimentWire, error: ExperimentError })
export const Stop = Rpc.make("Stop", {
  payload: { ...Address, reason: StopReason, note: Schema.NullOr(Schema.String) },
  success: ExperimentWire,
  error: ExperimentError
})
export const Results = Rpc.make("Results", { payload: Address, success: ExperimentResults, error: ExperimentError })

export const Experiment = Entity.make("Experiment", [Read, Start, Stop, Results])

/** The entity id of an experiment. */
export const experimentEntityId = (profileId: string, experimentId: string) => `${profileId}:${experimentId}`
