#!/usr/bin/env bash
# `npm run bench:split`: `partitions split touches` (decision 0147) while an old-release writer runs.
#
# A fresh database (BENCH_DB, default bench_split, on PGHOST/PGPORT/PGUSER: 127.0.0.1:5432, postgres)
# migrated by this release, BENCH_ROWS touches (1,000,000) seeded into `touches_legacy` over 12 months;
# then pgbench runs two clients of bench/split/writer.sql against the parent while the split runs.
# Printed: the split's output (`locked_ms`), its wall time, the writer's transactions and longest one
# before / during / after the split, and the check: every logged write is what the table holds (the
# last one wins), no other row changed, none lost. Exits 1 on any mismatch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROWS=${BENCH_ROWS:-1000000}
DB=${BENCH_DB:-bench_split}
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

dropdb --if-exists "$DB" >/dev/null 2>&1
createdb "$DB"
export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$DB"
export SVC_SECRETS_KEY=${SVC_SECRETS_KEY:-$(openssl rand -base64 32)}
npm run -s cli -- migrate >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d "$DB" -c "INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), 'bench');
  INSERT INTO profiles (id, workspace_id, name) SELECT gen_random_uuid(), id, 'bench' FROM workspaces"
sed "s/1000000/$ROWS/g" bench/split/seed.sql | psql -qX -v ON_ERROR_STOP=1 -d "$DB"
sed "s/random(1, 1000000)/random(1, $ROWS)/" bench/split/writer.sql > "$WORK/writer.sql"
echo "seeded $ROWS touches into touches_legacy"

SECONDS_RUN=$((60 + ROWS / 20000))
(cd "$WORK" && pgbench -n -M extended -c 2 -T "$SECONDS_RUN" -l -f writer.sql "$DB" > pgbench.out 2>&1) &
WRITER=$!
sleep 10
START=$(date +%s.%N)
npm run -s cli -- partitions split touches | tr -d '\n' | sed 's/"months": \[[^]]*\]/"months": [...]/'
echo
END=$(date +%s.%N)
echo "split: $(echo "$END - $START" | bc) s, whole process"
wait "$WRITER"
grep -E "transactions actually processed|failed transactions|tps" "$WORK/pgbench.out"
cat "$WORK"/pgbench_log.* | awk -v a="${START%.*}" -v b="${END%.*}" '{
  p = $5 < a ? "1 before" : ($5 <= b + 1 ? "2 during" : "3 after"); n[p]++; if ($3 > m[p]) m[p] = $3 }
  END { for (k in n) printf "writer %s the split: %d transactions, longest %.1f ms\n", substr(k, 3), n[k], m[k] / 1000 }' | sort
CHECK=$(psql -AtX -d "$DB" -c "
WITH last AS (SELECT DISTINCT ON (id) id, op, value FROM split_log ORDER BY id, seq DESC)
SELECT (SELECT count(*) FROM split_log) || ' ' ||
 (SELECT count(*) FROM last l LEFT JOIN touches t ON t.id = l.id
  WHERE (l.op = 'delete' AND t.id IS NOT NULL) OR (l.op <> 'delete' AND (t.id IS NULL OR t.campaign_name IS DISTINCT FROM l.value))) || ' ' ||
 (SELECT count(*) FROM touches t WHERE NOT EXISTS (SELECT 1 FROM last l WHERE l.id = t.id) AND t.campaign_name <> 'seed') || ' ' ||
 (SELECT count(*) FROM split_ids s WHERE NOT EXISTS (SELECT 1 FROM last l WHERE l.id = s.id)
  AND NOT EXISTS (SELECT 1 FROM touches t WHERE t.id = s.id)) || ' ' ||
 (SELECT count(*) FROM touches_legacy)")
read -r OPS WRONG STRAY LOST LEGACY <<<"$CHECK"
echo "check: $OPS writes; $WRONG wrong, $STRAY stray, $LOST lost; $LEGACY rows left in touches_legacy"
dropdb "$DB"
[[ "$WRONG" == 0 && "$STRAY" == 0 && "$LOST" == 0 ]]
