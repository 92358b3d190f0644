#!/usr/bin/env bash
# pgbench against duckmv: `pgbench -i` initialises (COPY FROM STDIN), a
# default run with 4 clients completes (write conflicts must come back as
# serialization failures, 40001, which pgbench retries/counts), then a
# materialized view over pgbench_history is refreshed and compared with its
# query. Usage: pgbench_client.sh HOST PORT.
set -euo pipefail
host="$1"
port="$2"

pgbench_bin="$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench | tail -n1)"
export PGHOST="$host" PGPORT="$port" PGUSER=test PGDATABASE=test PGCONNECT_TIMEOUT=10
psql_q() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }
fail() { echo "FAIL: $*"; exit 1; }

echo "$("$pgbench_bin" --version)"
init_log="$(mktemp)"
trap 'rm -f "$init_log"' EXIT
"$pgbench_bin" -i -s 1 -q >"$init_log" 2>&1 || { cat "$init_log"; fail "pgbench -i"; }
[ "$(psql_q 'SELECT count(*) FROM pgbench_accounts')" = 100000 ] || fail "pgbench_accounts row count"
echo "ok: pgbench -i -s 1 loaded 100000 accounts"

psql_q "CREATE MATERIALIZED VIEW pgb_hist AS SELECT bid, count(*) AS n, sum(delta) AS total FROM pgbench_history GROUP BY bid" >/dev/null

# Four clients updating one branch row conflict often: duckmv must answer
# 40001, which pgbench retries (--max-tries) and counts, instead of an error
# that aborts the client (pgbench then exits non-zero).
out="$("$pgbench_bin" -c 4 -j 2 -t 50 --max-tries=100 2>&1)" || { echo "$out"; fail "pgbench run (a client was aborted)"; }
processed="$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\)\/200$/\1/p')"
[ -n "$processed" ] && [ "$processed" -gt 0 ] || { echo "$out"; fail "no transaction completed"; }
echo "ok: pgbench -c 4 -t 50 completed ($processed/200 transactions; conflicts came back as 40001 and were retried)"
echo "$out" | grep -E "failed transactions|retried|retries" || true

psql_q "REFRESH MATERIALIZED VIEW pgb_hist" >/dev/null
diff="$(psql_q "SELECT count(*) FROM ((SELECT * FROM pgb_hist EXCEPT ALL SELECT bid, count(*), sum(delta) FROM pgbench_history GROUP BY bid) UNION ALL (SELECT bid, count(*), sum(delta) FROM pgbench_history GROUP BY bid EXCEPT ALL SELECT * FROM pgb_hist)) d")"
[ "$diff" = 0 ] || fail "materialized view over pgbench_history differs from its query ($diff rows)"
[ "$(psql_q 'SELECT sum(n) FROM pgb_hist')" = "$(psql_q 'SELECT count(*) FROM pgbench_history')" ] || fail "history rows in the view"
echo "ok: materialized view over pgbench_history matches after refresh"

# Introspection: the primary keys pgbench -i added, and the view, as psql shows them.
described="$(psql -X -c '\d pgbench_accounts')"
grep -q '"pgbench_accounts_pkey" PRIMARY KEY, btree (aid)' <<<"$described" \
    || { echo "$described"; fail "\\d pgbench_accounts shows no primary key"; }
listed="$(psql -X -c '\dm')"
grep -q 'pgb_hist' <<<"$listed" || { echo "$listed"; fail "\\dm does not list pgb_hist"; }
echo "ok: psql \\d shows pgbench's primary key and \\dm the view"
echo "all 5 checks passed"
