import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Saved reports and their runs (decisions 0085, 0086).
 *
 * - `reports`: what a saved report reads (`reads`), over which range and filters (`filters`), its
 *   optional schedule and recipients; `next_run_at` is the next scheduled slot (UTC), null when
 *   unscheduled.
 * - `report_runs`: one row per generation, its CSV and PDF kept for download. A scheduled run's
 *   `slot` (the slot's UTC instant) is unique per report, so a slot is run once however many
 *   workers race for it; `lease_until` lets another worker take over a run whose worker died.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE reports (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      name text NOT NULL,
      reads jsonb NOT NULL,
      range jsonb NOT NULL,
      filters jsonb NOT NULL,
      schedule jsonb,
      recipients jsonb NOT NULL,
      next_run_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX reports_profile ON reports (profile_id, created_at, id)`
  yield* sql`CREATE INDEX reports_due ON reports (next_run_at) WHERE next_run_at IS NOT NULL`
  yield* sql`
    CREATE TABLE report_runs (
      id uuid PRIMARY KEY,
      report_id uuid NOT NULL REFERENCES reports (id) ON DELETE CASCADE,
      profile_id uuid NOT NULL,
      trigger text NOT NULL CHECK (trigger IN ('manual', 'scheduled')),
      slot timestamptz,
      status text NOT NULL CHECK (status IN ('pending', 'running', 'generated', 'sending', 'sent', 'failed')),
      range_start date,
      range_end date,
      csv text,
      pdf_base64 text,
      csv_bytes integer,
      pdf_bytes integer,
      recipients jsonb,
      message_id text,
      error text,
      attempts integer NOT NULL DEFAULT 0,
      lease_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      generated_at timestamptz,
      sent_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX report_runs_slot ON report_runs (report_id, slot)`
  yield* sql`CREATE INDEX report_runs_report ON report_runs (report_id, created_at, id)`
  yield* sql`CREATE INDEX report_runs_claimable ON report_runs (created_at) WHERE status IN ('pending', 'running', 'sending')`
})
