-- The least PostgreSQL pays to store a replay's credit rows on this machine (issue 35 part 1):
-- no client, no statistics, no reads, no locks; the rows made by the server itself.
--
--   createdb floor && DATABASE_URL=postgres://.../floor npm run cli -- migrate
--   psql -v rows=16663428 -d floor -f bench/replay/write-floor.sql
--
-- 16,663,428 is the rows a 10M-touch replay stores (bench/replay at BENCH_TOUCHES=10000000); a
-- tenth is the 1M replay's. The rows have the replay's shape: six models per (conversion, touch),
-- random conversion and touch ids (md5, as the dataset's), times in one legacy month. Figures
-- and what they prove: bench/README.md, "replay: the durable floor of its writes".
\timing on
\set chunk 1000000
\set columns 'conversion_id, model, touch_id, position, credit_share, is_credited, in_window, profile_id, converted_at, touch_at'

-- 1. Made once, unlogged, so the phases below copy rows rather than compute them.
CREATE UNLOGGED TABLE floor_rows AS
  SELECT md5('c' || (g / 17))::uuid AS conversion_id,
         (ARRAY['last_touch', 'first_touch', 'last_non_direct', 'linear', 'time_decay', 'svc_model'])[1 + g % 6] AS model,
         md5('t' || (g / 6))::uuid AS touch_id, (g / 6) % 8 AS position, 0.25::numeric(12, 10) AS credit_share,
         true AS is_credited, true AS in_window, '00000000-0000-0000-0000-000000000001'::uuid AS profile_id,
         timestamptz '2026-06-01' + make_interval(secs => (g / 17) % 10000000) AS converted_at,
         timestamptz '2026-05-01' + make_interval(secs => (g / 6) % 10000000) AS touch_at,
         g
  FROM generate_series(1, :rows) AS g;
CREATE INDEX ON floor_rows (g);

-- 2. Into attribution_credits as the migrations leave it (its key, its touch index, its statement
--    trigger), a million rows to a statement and a transaction each, as a replay writes in chunks.
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
SELECT format('INSERT INTO attribution_credits (%s) SELECT %s FROM floor_rows WHERE g > %s AND g <= %s', :'columns', :'columns', k, k + :chunk)
FROM generate_series(0, :rows - 1, :chunk) AS k \gexec
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 1) AS into_credits_seconds;
TRUNCATE attribution_credits;

-- 3. Into a bare logged heap (no index, no trigger), then the two indexes the reads need, built once.
CREATE TABLE floor_heap (LIKE attribution_credits INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
SELECT format('INSERT INTO floor_heap (%s) SELECT %s FROM floor_rows WHERE g > %s AND g <= %s', :'columns', :'columns', k, k + :chunk)
FROM generate_series(0, :rows - 1, :chunk) AS k \gexec
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 1) AS heap_seconds;
SET maintenance_work_mem = '1GB';
ALTER TABLE floor_heap ADD PRIMARY KEY (conversion_id, model, touch_id, profile_id, converted_at);
CREATE INDEX ON floor_heap (touch_id);
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 1) AS heap_and_indexes_seconds;

DROP TABLE floor_heap;
DROP TABLE floor_rows;
