"""asyncpg against duckmv: binary protocol, type introspection, COPY in binary
and text, a materialized view refreshed and read back.

Usage: python3 asyncpg_client.py HOST PORT.
"""
import asyncio
import datetime
import io
import sys
from decimal import Decimal

import asyncpg
from asyncpg import introspection

from checks import check, done, oracle_sql


async def main(host, port):
    conn = await asyncpg.connect(host=host, port=port, user="test", database="test")
    print(f"asyncpg {asyncpg.__version__}, server {conn.get_server_version()}")
    await conn.execute("DROP MATERIALIZED VIEW IF EXISTS apg_daily")
    await conn.execute("DROP TABLE IF EXISTS apg_events")
    await conn.execute("DROP TYPE IF EXISTS apg_mood")
    await conn.execute(
        "CREATE TABLE apg_events (id bigint PRIMARY KEY, kind text, day date, "
        "val double precision, ok boolean, price numeric(8,2), tags text[])"
    )
    daily_q = "SELECT day, count(*) AS n, sum(val) AS total FROM apg_events GROUP BY day"
    await conn.execute(f"CREATE MATERIALIZED VIEW apg_daily AS {daily_q}")
    d1, d2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
    # executemany with binary parameters.
    await conn.executemany(
        "INSERT INTO apg_events VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [
            (1, "x", d1, 1.5, True, Decimal("1.10"), ["a", "b"]),
            (2, "y", d1, 2.5, False, Decimal("2.20"), []),
            (3, "x", d2, 4.0, None, None, None),
        ],
    )
    row = await conn.fetchrow("SELECT * FROM apg_events WHERE id = $1", 1)
    check(
        "binary round trip of a row",
        tuple(row),
        (1, "x", d1, 1.5, True, Decimal("1.10"), ["a", "b"]),
    )
    check("fetchval with a typed parameter", await conn.fetchval("SELECT $1::int * 2", 21), 42)
    # A prepared statement reused.
    stmt = await conn.prepare("SELECT kind FROM apg_events WHERE id = $1")
    check("prepared statement", [await stmt.fetchval(i) for i in (1, 2, 3)], ["x", "y", "x"])
    check(
        "prepared statement parameter types (introspected)",
        [t.name for t in stmt.get_parameters()],
        ["int8"],
    )
    check(
        "prepared statement result type",
        [(a.name, a.type.name) for a in stmt.get_attributes()],
        [("kind", "text")],
    )
    # Transactions.
    try:
        async with conn.transaction():
            await conn.execute("INSERT INTO apg_events (id, kind, day, val) VALUES (9, 'z', $1, 1)", d2)
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    check("transaction rolled back", await conn.fetchval("SELECT count(*) FROM apg_events WHERE id = 9"), 0)

    await conn.execute("REFRESH MATERIALIZED VIEW apg_daily")
    rows = await conn.fetch("SELECT day, n, total FROM apg_daily ORDER BY day")
    check("materialized view after refresh", [tuple(r) for r in rows], [(d1, 2, 4.0), (d2, 1, 4.0)])
    await conn.execute("INSERT INTO apg_events (id, kind, day, val) VALUES (4, 'y', $1, 10)", d2)
    await conn.execute("REFRESH MATERIALIZED VIEW apg_daily")
    rows = await conn.fetch("SELECT day, n, total FROM apg_daily ORDER BY day")
    check("materialized view after a second refresh", [tuple(r) for r in rows], [(d1, 2, 4.0), (d2, 2, 14.0)])
    await conn.execute("UPDATE apg_events SET val = val * 2 WHERE kind = $1", "x")
    await conn.execute("DELETE FROM apg_events WHERE id = $1", 2)
    await conn.execute("REFRESH MATERIALIZED VIEW apg_daily")
    check(
        "view equals its query after UPDATE/DELETE and refresh",
        await conn.fetchval(oracle_sql("apg_daily", daily_q)),
        0,
    )
    rows = await conn.fetch("SELECT day, n, total FROM apg_daily ORDER BY day")
    check("view rows after UPDATE/DELETE", [tuple(r) for r in rows], [(d1, 1, 3.0), (d2, 2, 18.0)])

    # Bulk loads: copy_records_to_table sends COPY in binary format, copy_to_table in text;
    # each from a connection closed right after, so the rows must have been committed.
    records = [
        (100 + i, "c" if i % 2 else None, d1 if i % 3 else d2, i / 4, i % 5 == 0, Decimal(i) / 100, ["t", str(i)])
        for i in range(3000)
    ]
    loader = await asyncpg.connect(host=host, port=port, user="test", database="test")
    check("copy_records_to_table (binary COPY)", await loader.copy_records_to_table("apg_events", records=records), "COPY 3000")
    await loader.close()
    loader = await asyncpg.connect(host=host, port=port, user="test", database="test")
    text = io.BytesIO(b"5000\tt\t2024-01-02\t0.5\tt\t1.25\t{a}\n5001\t\\N\t2024-01-01\t1\tf\t\\N\t\\N\n")
    check("copy_to_table (text COPY)", await loader.copy_to_table("apg_events", source=text), "COPY 2")
    await loader.close()
    loaded = await conn.fetch("SELECT * FROM apg_events WHERE id >= 100 AND id < 5000 ORDER BY id")
    check("rows loaded by binary COPY", [tuple(r) for r in loaded], records)
    check(
        "a row loaded by text COPY",
        tuple(await conn.fetchrow("SELECT * FROM apg_events WHERE id = 5000")),
        (5000, "t", d2, 0.5, True, Decimal("1.25"), ["a"]),
    )
    await conn.execute("REFRESH MATERIALIZED VIEW apg_daily")
    check("view equals its query after COPY", await conn.fetchval(oracle_sql("apg_daily", daily_q)), 0)

    # Array parameters: asyncpg has no built-in codec for int4[] and looks
    # the type up with its introspection query first.
    check("int[] parameter (introspected array type)", await conn.fetchval("SELECT $1::int[]", [1, 2, 3]), [1, 2, 3])
    check(
        "array parameter in a WHERE clause",
        await conn.fetchval("SELECT count(*) FROM apg_events WHERE id = any($1::bigint[])", [1, 3, 99]),
        2,
    )

    # Type introspection: asyncpg's own catalog queries (what it runs for a
    # type OID it does not know) over the binary protocol. duckmv reports
    # only built-in OIDs in results, so asyncpg itself never needs them.
    await conn.execute("CREATE TYPE apg_mood AS ENUM ('sad', 'happy')")
    found = await conn.fetch(introspection.TYPE_BY_NAME, "apg_mood", "public")
    check("introspection TYPE_BY_NAME finds the enum", len(found), 1)
    tree = await conn.fetch(introspection.INTRO_LOOKUP_TYPES, [found[0]["oid"], 1007])
    check(
        "introspection INTRO_LOOKUP_TYPES",
        sorted((r["name"], r["ns"], r["elemtype_name"]) for r in tree),
        [("_int4", "pg_catalog", "integer"), ("apg_mood", "public", "-"), ("int4", "pg_catalog", "-")],
    )
    types = await conn.fetch(
        "SELECT t.typname, t.oid FROM pg_catalog.pg_type t "
        "WHERE t.typname IN ('int4', 'text', 'numeric', 'timestamptz', '_int4') ORDER BY t.oid"
    )
    check(
        "pg_type has PostgreSQL's OIDs",
        [tuple(r) for r in types],
        [("int4", 23), ("text", 25), ("_int4", 1007), ("timestamptz", 1184), ("numeric", 1700)],
    )
    kinds = await conn.fetch(
        "SELECT c.relname, c.relkind::text FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relname LIKE 'apg_%' ORDER BY 1"
    )
    check("pg_class kinds", [tuple(r) for r in kinds], [("apg_daily", "m"), ("apg_events", "r"), ("apg_events_pkey", "i")])
    await conn.close()


asyncio.run(main(sys.argv[1], int(sys.argv[2])))
done()
