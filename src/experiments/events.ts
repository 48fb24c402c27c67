/**
 * `experiment.completed` (issue 32): one outbox row, written in the transaction that completes the
 * experiment (by a `window_ended` stop or by the first read after its window), so it is queued
 * exactly once. A lifecycle event: opt-in for subscriptions (schema/webhooks.ts).
 */
import type { ExperimentResults } from "../../schema/experiments.ts"
import type { NewOutboxRow } from "../kernel/outbox/repo.ts"
import type { ExperimentRow } from "./repo.ts"

export const EXPERIMENT_COMPLETED = "experiment.completed"

/** What a receiver needs to decide without reading the results: the lift with its interval or why there is none. */
export const resultsSummary = (results: ExperimentResults) => ({
  method: results.method,
  analysed: results.analysed,
  treatment: results.treatment,
  control: results.control,
  absolute_lift: results.absolute_lift,
  relative_lift: results.relative_lift,
  incremental_conversions: results.incremental_conversions,
  incremental_value: results.incremental_value,
  insufficient_data: results.insufficient_data,
  failed_checks: results.failed_checks
})

export const experimentCompletedEvent = (row: ExperimentRow, results: ExperimentResults): NewOutboxRow => {
  const id = crypto.randomUUID()
  return {
    id,
    profileId: row.profile_id,
    topic: EXPERIMENT_COMPLETED,
    payload: {
      id,
      type: EXPERIMENT_COMPLETED,
      created_at: new Date().toISOString(),
      data: {
        id: row.id,
        profile_id: row.profile_id,
        kind: row.kind,
        name: row.name,
        status: row.status,
        status_reason: row.status_reason,
        metric: { conversion_key: row.conversion_key, measure: row.measure },
        window: { start: row.window_start, end: row.window_end },
        completed_at: row.completed_at,
        results: resultsSummary(results)
      },
      delivery: { profile_id: row.profile_id }
    }
  }
}
