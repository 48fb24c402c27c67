/**
 * Probes of `conversions` shared by the statements of other owners that read it (the export
 * pipeline, customers): one way to find a conversion by a near-unique key whatever the planner
 * knows (decision 0154).
 */
import type { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"

/** A value bound as a parameter, or a column or expression of the statement. */
type Operand = string | Fragment

/**
 * The conversion of an outcome event, probed by its whole key with the profile as a filter
 * (decision 0154): `IS NOT DISTINCT FROM` is no index condition, so only the
 * one-conversion-per-outcome key (`conversions_outcome_event_month`) can answer it. With the profile
 * as an equality, a plan made while the event's month was empty could take (profile_id, occurred_at,
 * id) instead and read every conversion of the profile at that instant (an import stamped at one
 * time: 200,000 rows a probe). The time stays an equality: it names the month.
 */
export const conversionOfEvent = (sql: SqlClient, alias: string, event: { readonly id: Operand; readonly profile: Operand; readonly at: Operand }) =>
  sql`${sql.literal(alias)}.outcome_event_id = ${event.id} AND ${sql.literal(alias)}.profile_id IS NOT DISTINCT FROM ${event.profile}
    AND ${sql.literal(alias)}.occurred_at = ${event.at}`
