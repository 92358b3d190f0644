"""psycopg 3 against duckmv: server-side binding, executemany, COPY, a
materialized view refreshed and read back, catalog introspection, and
LISTEN / NOTIFY (refresh notifications included).

Usage: python3 psycopg_client.py HOST PORT. Prints one `ok:` line per check
and exits non-zero (with a `FAIL:` line) on the first mismatch.
"""
import json
import signal
import sys
from decimal import Decimal

import psycopg

from checks import check, done, oracle_sql

host, port = sys.argv[1], int(sys.argv[2])
conn = psycopg.connect(host=host, port=port, user="test", dbname="test", autocommit=True)
print(f"psycopg {psycopg.__version__}, server_version {conn.info.server_version}")
cur = conn.cursor()

cur.execute("DROP MATERIALIZED VIEW IF EXISTS py_totals")
cur.execute("DROP TABLE IF EXISTS py_orders")
cur.execute("CREATE TABLE py_orders (id integer PRIMARY KEY, grp text NOT NULL, amount numeric(12,2))")
TOTALS_Q = "SELECT grp, sum(amount) AS total, count(*) AS n FROM py_orders GROUP BY grp"
cur.execute(f"CREATE MATERIALIZED VIEW py_totals AS {TOTALS_Q}")

# Server-side binding: psycopg 3 sends parameters separately ($1, $2, ...).
cur.execute("INSERT INTO py_orders VALUES (%s, %s, %s)", (1, "a", Decimal("10.50")))
cur.execute("SELECT grp, amount FROM py_orders WHERE id = %s", (1,))
check("server-side binding", cur.fetchall(), [("a", Decimal("10.50"))])

# executemany (pipelined extended protocol in psycopg >= 3.1).
cur.executemany(
    "INSERT INTO py_orders (id, grp, amount) VALUES (%s, %s, %s)",
    [(2, "a", Decimal("1.25")), (3, "b", Decimal("7.00")), (4, "b", None)],
)
cur.execute("SELECT count(*) FROM py_orders")
check("executemany", cur.fetchone()[0], 4)

# Prepared past the threshold: the same statement many times.
for i in range(8):
    cur.execute("SELECT %s::int + 1", (i,), prepare=True)
    check_val = cur.fetchone()[0]
check("prepared statement reuse", check_val, 8)

# Transactions with autocommit off.
conn.autocommit = False
cur.execute("INSERT INTO py_orders VALUES (5, 'c', 3.00)")
conn.rollback()
cur.execute("SELECT count(*) FROM py_orders WHERE id = 5")
check("rollback", cur.fetchone()[0], 0)
conn.commit()
conn.autocommit = True

cur.execute("REFRESH MATERIALIZED VIEW py_totals")
cur.execute("SELECT grp, total, n FROM py_totals ORDER BY grp")
check(
    "materialized view after refresh",
    cur.fetchall(),
    [("a", Decimal("11.75"), 2), ("b", Decimal("7.00"), 2)],
)

# Catalog introspection psycopg users do.
cur.execute(
    "SELECT table_name FROM information_schema.tables "
    "WHERE table_schema = 'public' AND table_name LIKE 'py_%' ORDER BY 1"
)
names = [r[0] for r in cur.fetchall()]
check("information_schema.tables lists the table", "py_orders" in names, True)
cur.execute(
    "SELECT column_name, data_type FROM information_schema.columns "
    "WHERE table_schema = 'public' AND table_name = 'py_orders' ORDER BY ordinal_position"
)
check(
    "information_schema.columns",
    cur.fetchall(),
    [("id", "integer"), ("grp", "text"), ("amount", "numeric")],
)
cur.execute("SELECT relkind FROM pg_catalog.pg_class WHERE relname = 'py_totals'")
check("pg_class relkind of the materialized view", cur.fetchall(), [("m",)])
cur.execute("SELECT 'py_orders'::regclass::oid = (SELECT oid FROM pg_class WHERE relname = 'py_orders')")
check("regclass cast", cur.fetchone()[0], True)
ti = psycopg.types.TypeInfo.fetch(conn, "int4")
check("TypeInfo.fetch(int4).oid", ti.oid if ti else None, 23)

# COPY FROM STDIN and COPY TO STDOUT. A server that never answers the
# COPY must fail the check, not hang it.
def copy_timeout(signum, frame):
    print("FAIL: COPY did not complete within 30 s", flush=True)
    sys.exit(1)


signal.signal(signal.SIGALRM, copy_timeout)
signal.alarm(30)
with cur.copy("COPY py_orders (id, grp, amount) FROM STDIN") as copy:
    copy.write_row((10, "c", Decimal("2.00")))
    copy.write_row((11, "c", Decimal("3.00")))
cur.execute("SELECT count(*) FROM py_orders WHERE grp = 'c'")
check("COPY FROM STDIN", cur.fetchone()[0], 2)
out = []
with cur.copy("COPY (SELECT id, grp FROM py_orders WHERE grp = 'c' ORDER BY id) TO STDOUT") as copy:
    for row in copy.rows():
        out.append(row)
check("COPY TO STDOUT", out, [("10", "c"), ("11", "c")])
signal.alarm(0)
cur.execute("REFRESH MATERIALIZED VIEW py_totals")
cur.execute("SELECT total, n FROM py_totals WHERE grp = 'c'")
check("COPY rows reach the materialized view", cur.fetchall(), [(Decimal("5.00"), 2)])

# Updates and deletes, refreshed incrementally; the view must equal its
# query run fresh.
cur.execute("UPDATE py_orders SET amount = amount + %s WHERE grp = %s", (Decimal("1.00"), "a"))
cur.execute("DELETE FROM py_orders WHERE id = %s", (3,))
cur.execute("REFRESH MATERIALIZED VIEW py_totals")
cur.execute(oracle_sql("py_totals", TOTALS_Q))
check("view equals its query after UPDATE/DELETE and refresh", cur.fetchone()[0], 0)
cur.execute("SELECT grp, total, n FROM py_totals ORDER BY grp")
check(
    "view rows after UPDATE/DELETE",
    cur.fetchall(),
    [("a", Decimal("13.75"), 2), ("b", None, 1), ("c", Decimal("5.00"), 2)],
)

# A savepoint inside a transaction, as psycopg's nested transaction() sends.
conn.autocommit = False
with conn.transaction():
    with conn.transaction():
        cur.execute("SELECT count(*) FROM py_orders")
    cur.execute("INSERT INTO py_orders VALUES (20, 'd', 1.00)")
conn.autocommit = True
cur.execute("SELECT count(*) FROM py_orders WHERE id = 20")
check("nested transaction (SAVEPOINT / RELEASE) commits", cur.fetchone()[0], 1)

# LISTEN / NOTIFY: another connection listens and reads its notifications with
# notifies(), which waits on the socket while the connection is idle.
cur.execute("REFRESH MATERIALIZED VIEW py_totals")  # nothing pending from here on
listen = psycopg.connect(host=host, port=port, user="test", dbname="test", autocommit=True)
listen.execute("LISTEN py_events")
listen.execute("LISTEN duckmv_refresh")
listen.execute('LISTEN "duckmv_refresh.py_totals"')
cur.execute("NOTIFY py_events, 'hello from psycopg'")
got = [(n.channel, n.payload, n.pid) for n in listen.notifies(timeout=10, stop_after=1)]
check(
    "NOTIFY reaches another connection",
    got,
    [("py_events", "hello from psycopg", conn.info.backend_pid)],
)
cur.execute("SELECT pg_notify(%s, %s)", ("py_events", "bound"))
got = [(n.channel, n.payload) for n in listen.notifies(timeout=10, stop_after=1)]
check("pg_notify with bound arguments", got, [("py_events", "bound")])
# A REFRESH that changes the view notifies duckmv_refresh and the view's own channel.
cur.execute("INSERT INTO py_orders VALUES (30, 'e', 2.00)")
cur.execute("REFRESH MATERIALIZED VIEW py_totals")
got = [(n.channel, json.loads(n.payload)) for n in listen.notifies(timeout=10, stop_after=2)]
payload = {"view": "py_totals", "rows": 1}
check(
    "REFRESH notifies duckmv_refresh and duckmv_refresh.<view>",
    sorted(got, key=lambda n: n[0]),
    [("duckmv_refresh", payload), ("duckmv_refresh.py_totals", payload)],
)
cur.execute("REFRESH MATERIALIZED VIEW py_totals")
check("REFRESH with nothing pending notifies nobody", list(listen.notifies(timeout=0.5)), [])
listen.close()

conn.close()
done()
