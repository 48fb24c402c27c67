import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** Provider sync work, queued durably (backfills when the attribution add-on goes on). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE sync_jobs (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      connection_id uuid NOT NULL REFERENCES connections (id),
      kind text NOT NULL CHECK (kind IN ('backfill', 'structure', 'insights')),
      window_days integer,
      status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
      reason text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX sync_jobs_queue ON sync_jobs (status, created_at)`
})
