/**
 * A queue's backlog as a repository reads it and as the API shows it (decision 0120), shared by
 * the webhook subscriptions and the export destinations: one row per endpoint.
 */
import { Schema } from "effect"
import { type Backlog, BACKLOG_COUNT_CAP, NO_BACKLOG } from "../../schema/common.ts"

/** One endpoint's backlog, as the repositories' `backlogs` read it (counts stopped at their caps). */
export const BacklogRow = Schema.Struct({
  id: Schema.String,
  pending: Schema.Int,
  oldest_pending_age_seconds: Schema.NullOr(Schema.Int),
  delivered_last_minute: Schema.Int
})
export type BacklogRow = typeof BacklogRow.Type

/** The published backlog of an endpoint's row; an endpoint with no row has an empty queue. */
export const backlogOf = (row: BacklogRow | undefined): Backlog =>
  row === undefined ? NO_BACKLOG : {
    pending: row.pending,
    pending_capped: row.pending >= BACKLOG_COUNT_CAP,
    oldest_pending_age_seconds: row.oldest_pending_age_seconds,
    delivered_last_minute: row.delivered_last_minute
  }
