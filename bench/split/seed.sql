-- BENCH_ROWS touches (the runner substitutes 1000000) over the 12 months before the install's
-- legacy bound, so in touches_legacy; the seeded ids numbered for the writer, and its log.
CREATE TABLE split_meta AS SELECT id AS profile_id FROM profiles LIMIT 1;
INSERT INTO touches (id, profile_id, kind, occurred_at, channel, campaign_name, anonymous_id, customer_id)
SELECT gen_random_uuid(), (SELECT profile_id FROM split_meta), 'web_touch',
  date_trunc('month', now()) - interval '365 days' + (g * interval '31 seconds'), 'paid_search', 'seed', 'a' || (g % 50000), NULL
FROM generate_series(1, 1000000) g;
CREATE TABLE split_ids AS SELECT row_number() OVER (ORDER BY id) AS n, id, occurred_at FROM touches_legacy;
CREATE UNIQUE INDEX ON split_ids (n);
CREATE TABLE split_log (seq bigserial PRIMARY KEY, id uuid NOT NULL, op text NOT NULL, value text);
ANALYZE;
