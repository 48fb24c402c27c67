-- One old-release write per transaction, logged in the same transaction (bench/split/run.sh):
-- 70 % update a random seeded touch, 10 % delete one, 20 % insert a touch into an old month.
\set r random(1, 1000000)
\set op random(1, 10)
BEGIN;
SELECT id AS tid, occurred_at AS tat FROM split_ids WHERE n = :r \gset
\if :op <= 7
UPDATE touches SET campaign_name = 'w-' || :client_id || '-' || txid_current() WHERE id = :tid AND profile_id = (SELECT profile_id FROM split_meta);
INSERT INTO split_log (id, op, value) SELECT :tid, 'update', 'w-' || :client_id || '-' || txid_current() WHERE EXISTS (SELECT 1 FROM touches WHERE id = :tid);
\elif :op <= 8
DELETE FROM touches WHERE id = :tid;
INSERT INTO split_log (id, op, value) VALUES (:tid, 'delete', NULL);
\else
INSERT INTO touches (id, profile_id, kind, occurred_at, channel, campaign_name)
  SELECT gen_random_uuid(), profile_id, 'web_touch', :tat::timestamptz + interval '1 second', 'direct', 'new' FROM split_meta RETURNING id AS nid \gset
INSERT INTO split_log (id, op, value) VALUES (:nid, 'insert', 'new');
\endif
COMMIT;
