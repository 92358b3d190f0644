"""SQLAlchemy 2 (psycopg 3 dialect) against duckmv: Core inserts, a
materialized view refreshed and read back, and reflection through
`inspect(engine)`.

Usage: python3 sqlalchemy_client.py HOST PORT.
"""
import os
import re
import sys

import sqlalchemy as sa

from checks import check, done

host, port = sys.argv[1], int(sys.argv[2])
# SA_NO_HSTORE=1 skips the dialect's hstore lookup, which psycopg runs in a
# SAVEPOINT (for servers without savepoints; the default is what users get).
engine = sa.create_engine(
    f"postgresql+psycopg://test@{host}:{port}/test",
    **({"use_native_hstore": False} if os.environ.get("SA_NO_HSTORE") else {}),
)
print(f"SQLAlchemy {sa.__version__}")

with engine.begin() as c:
    c.execute(sa.text("DROP MATERIALIZED VIEW IF EXISTS sa_stock"))
    c.execute(sa.text("DROP TABLE IF EXISTS sa_items"))

meta = sa.MetaData()
items = sa.Table(
    "sa_items",
    meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("name", sa.String(40), nullable=False),
    sa.Column("qty", sa.Integer),
    sa.Column("added", sa.DateTime),
)
meta.create_all(engine)

with engine.begin() as c:
    c.execute(
        sa.text("CREATE MATERIALIZED VIEW sa_stock AS SELECT name, sum(qty) AS qty FROM sa_items GROUP BY name")
    )
    c.execute(items.insert(), [{"id": 1, "name": "bolt", "qty": 5}, {"id": 2, "name": "nut", "qty": 7}])
    c.execute(items.insert().values(id=3, name="bolt", qty=1))

with engine.begin() as c:
    c.execute(sa.text("REFRESH MATERIALIZED VIEW sa_stock"))
    rows = c.execute(sa.text("SELECT name, qty FROM sa_stock ORDER BY name")).all()
    check("materialized view after refresh", [tuple(r) for r in rows], [("bolt", 6), ("nut", 7)])
    got = c.execute(sa.select(items.c.name).where(items.c.id == sa.bindparam("i")), {"i": 2}).scalar_one()
    check("Core select with a bound parameter", got, "nut")

insp = sa.inspect(engine)
check("default schema", insp.default_schema_name, "public")
check("get_table_names", "sa_items" in insp.get_table_names(), True)
check("materialized view not among tables", "sa_stock" in insp.get_table_names(), False)
check("get_materialized_view_names", "sa_stock" in insp.get_materialized_view_names(), True)
cols = insp.get_columns("sa_items")
check(
    "get_columns names and types",
    # DuckDB keeps neither a VARCHAR length nor the difference between
    # VARCHAR and TEXT, so string columns are compared as "string".
    [(c["name"], re.sub(r"^(VARCHAR|TEXT).*", "string", str(c["type"])), c["nullable"]) for c in cols],
    [("id", "INTEGER", False), ("name", "string", False), ("qty", "INTEGER", True), ("added", "TIMESTAMP", True)],
)
check("get_pk_constraint", insp.get_pk_constraint("sa_items")["constrained_columns"], ["id"])
check("has_table", insp.has_table("sa_items"), True)
check("has_table (missing)", insp.has_table("no_such_table"), False)
mv_cols = insp.get_columns("sa_stock")
check("get_columns of the materialized view", [c["name"] for c in mv_cols], ["name", "qty"])
reflected = sa.Table("sa_items", sa.MetaData(), autoload_with=engine)
check("Table autoload", [c.name for c in reflected.columns], ["id", "name", "qty", "added"])
engine.dispose()
done()
