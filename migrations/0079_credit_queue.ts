import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Conversions waiting for credit get a queue of their own (decision 0152): `credit_queue` holds the
 * whole key of each, and `conversions.credited_at` goes. Marking a conversion credited was an
 * update of `conversions` through a partial index on `credited_at IS NULL`, so never HOT: a new
 * version of the row in all ten indexes and the analytics marks of its day, twice (the worker after
 * every batch of ingest, a replay for each conversion it settles; issue 35 parts 1 and 2). Now it is
 * a delete from a narrow table, and the conversion is not written at all.
 *
 * Every conversion enters the queue when it is inserted (a statement trigger, so every writer,
 * the recorder, sync, a test's fixture, is covered) and leaves it with its rows when it is deleted.
 * The queue is ordered as the partial index was (the conversion's `created_at`, then id).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE credit_queue (
      profile_id uuid NOT NULL,
      conversion_id uuid NOT NULL,
      occurred_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (profile_id, conversion_id, occurred_at)
    )`
  yield* sql`CREATE INDEX credit_queue_order ON credit_queue (created_at, conversion_id)`
  yield* sql`
    INSERT INTO credit_queue (profile_id, conversion_id, occurred_at, created_at)
    SELECT profile_id, id, occurred_at, created_at FROM conversions WHERE credited_at IS NULL`
  yield* sql`DROP INDEX conversions_uncredited`
  yield* sql`ALTER TABLE conversions DROP COLUMN credited_at`
  yield* sql`
    CREATE FUNCTION credit_queue_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO credit_queue (profile_id, conversion_id, occurred_at, created_at)
      SELECT profile_id, id, occurred_at, created_at FROM new_rows;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE FUNCTION credit_queue_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM credit_queue q USING old_rows o
      WHERE q.profile_id = o.profile_id AND q.conversion_id = o.id AND q.occurred_at = o.occurred_at;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER credit_queue_enqueue AFTER INSERT ON conversions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION credit_queue_enqueue()`
  yield* sql`
    CREATE TRIGGER credit_queue_cascade AFTER DELETE ON conversions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION credit_queue_cascade()`
})
