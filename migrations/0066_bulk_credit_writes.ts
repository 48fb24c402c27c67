import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Credit rows written in bulk (issue 35 part 1, decision 0131).
 *
 * - The two foreign keys of `attribution_credits` (to `conversions` and `touches`) are replaced:
 *   each was a per-row check (an index probe and a row lock with its WAL record on the parent)
 *   that took about two thirds of a replay's insert time. What they guaranteed stays guaranteed:
 *   - cascade: statement-level triggers delete the credit rows of deleted conversions and touches
 *     (set-based, over the statement's deleted rows, same profile);
 *   - no row whose parent is gone: such a delete takes the profile's crediting lock exclusively
 *     (`attribution_credit_lock_key`) before its cascade, and every crediting transaction holds
 *     it shared from before it reads until it commits (src/attribution/repo.ts `lockCrediting`).
 *     A delete therefore waits for the writers that may have read the row, and its cascade then
 *     sees their rows; a writer that starts after it does not read the deleted row.
 *   - a key update of a referenced row (which the foreign keys refused) is refused.
 * - `work_jobs.parts` and `parts_done`: how a replay split its profile, and the parts already
 *   committed, so an attempt that follows an interrupted one resumes where it stopped.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  const keys = yield* sql<{ readonly name: string }>`
    SELECT k.conname AS name FROM pg_constraint k
    JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND t.relname = 'attribution_credits' AND k.contype = 'f'`
  for (const key of keys) yield* sql.unsafe(`ALTER TABLE attribution_credits DROP CONSTRAINT "${key.name.replaceAll("\"", "\"\"")}"`)

  yield* sql`
    CREATE FUNCTION attribution_credit_lock_key(profile uuid) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended('attribution_credits:' || profile::text, 0) $$`
  yield* sql`
    CREATE FUNCTION attribution_credits_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- In profile order, so two deletes spanning the same profiles cannot deadlock on these locks.
      PERFORM pg_advisory_xact_lock(attribution_credit_lock_key(x.profile_id))
      FROM (SELECT DISTINCT profile_id FROM old_rows ORDER BY 1) x;
      IF TG_TABLE_NAME = 'conversions' THEN
        DELETE FROM attribution_credits a USING old_rows o WHERE a.conversion_id = o.id AND a.profile_id = o.profile_id;
      ELSE
        DELETE FROM attribution_credits a USING old_rows o WHERE a.touch_id = o.id AND a.profile_id = o.profile_id;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER attribution_credits_cascade AFTER DELETE ON conversions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION attribution_credits_cascade()`
  yield* sql`
    CREATE TRIGGER attribution_credits_cascade AFTER DELETE ON touches
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION attribution_credits_cascade()`
  yield* sql`
    CREATE FUNCTION attribution_credits_key_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (
        SELECT 1 FROM attribution_credits a
        WHERE a.profile_id = OLD.profile_id
          AND CASE WHEN TG_TABLE_NAME = 'conversions' THEN a.conversion_id ELSE a.touch_id END = OLD.id
      ) THEN
        RAISE EXCEPTION 'the key of a % row credit rows refer to cannot change', TG_TABLE_NAME USING ERRCODE = 'foreign_key_violation';
      END IF;
      RETURN NEW;
    END $$`
  for (const table of ["conversions", "touches"]) {
    yield* sql.unsafe(`
      CREATE TRIGGER attribution_credits_key_guard BEFORE UPDATE OF id, profile_id ON ${table}
      FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.profile_id IS DISTINCT FROM NEW.profile_id)
      EXECUTE FUNCTION attribution_credits_key_guard()`)
  }

  yield* sql`ALTER TABLE work_jobs ADD COLUMN parts integer, ADD COLUMN parts_done integer[] NOT NULL DEFAULT '{}'`
})
