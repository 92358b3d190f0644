#!/usr/bin/env bash
# dbt end to end against duckmv, as tests/clients/with-server.sh runs it: `run.sh HOST PORT`.
# Seeds, a view, a table, an incremental model, materialized views, schema tests and
# `dbt docs generate`; then the data changes and `dbt run` again must refresh the materialized
# views (not drop and create them), and every test must pass again.
set -euo pipefail
host="$1"
port="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dbt="${DUCKMV_DBT:-${DUCKMV_DBT_VENV:-$HOME/.cache/duckmv-dbt-venv}/bin/dbt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/dbt_project.yml" "$here/profiles.yml" "$here/seeds" "$here/models" "$here/tests" "$work/"
export DBT_HOST="$host" DBT_PORT="$port" DBT_PROFILES_DIR="$work" DBT_DATABASE=analytics
export DBT_SEND_ANONYMOUS_USAGE_STATS=false DBT_USE_COLORS=false DBT_PRINTER_WIDTH=100
cd "$work"

step() {
    if ! "$dbt" "$@" >"$work/out.txt" 2>&1; then
        echo "FAIL: dbt $* — output:" >&2
        cat "$work/out.txt" >&2
        echo "--- logs/dbt.log (last 80 lines):" >&2
        tail -n 80 logs/dbt.log >&2 || true
        exit 1
    fi
    echo "ok: dbt $*"
}

sql() {
    psql -X -q -h "$host" -p "$port" -U dbt -d analytics -v ON_ERROR_STOP=1 -At -c "$1"
}

step debug
step seed
step run
step test
step docs generate
[ -s target/catalog.json ] && grep -q '"customer_totals"' target/catalog.json \
    || { echo "FAIL: catalog.json does not list the materialized view" >&2; exit 1; }
echo "ok: docs catalog lists the models"
[ "$(sql "select count(*) from pg_matviews where schemaname = 'dbt_eval'")" = 2 ] \
    || { echo "FAIL: pg_matviews does not show both views in dbt_eval" >&2; exit 1; }
echo "ok: pg_matviews shows the views in their schema"
[ "$(sql "select count(*) from duckmv.views where schema = 'dbt_eval' and strategy like 'incremental%'")" = 2 ] \
    || { echo "FAIL: the materialized views are not maintained incrementally" >&2; sql "select * from duckmv.views" >&2; exit 1; }
echo "ok: both materialized views are incremental"

# The data changes; the second run refreshes the materialized views in place.
sql "insert into dbt_eval.raw_orders values (8, 5, 20.00, 'shipped', '2024-03-05');
     update dbt_eval.raw_orders set status = 'cancelled' where id = 7;
     update dbt_eval.raw_orders set status = 'shipped' where id = 2;
     delete from dbt_eval.raw_orders where id = 1;"
: >logs/dbt.log
step run
grep -qi 'refresh materialized view' logs/dbt.log \
    || { echo "FAIL: the second run did not refresh the materialized views" >&2; exit 1; }
if grep -qi 'create materialized view' logs/dbt.log; then
    echo "FAIL: the second run created a materialized view again" >&2
    exit 1
fi
echo "ok: second run refreshed the materialized views"
[ "$(sql "select case when total = 20 then 'yes' else 'no' end from dbt_eval.customer_totals where customer_id = 5")" = yes ] \
    || { echo "FAIL: customer_totals did not pick up the new order" >&2; exit 1; }
echo "ok: refreshed view holds the change"
step test
echo "ok: dbt suite passed"
