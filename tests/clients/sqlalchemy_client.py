"""SQLAlchemy 2 (psycopg 3 dialect) against duckmv: Core inserts, a
materialized view refreshed and read back, and reflection through
`inspect(engine)`.

Usage: python3 sqlalchemy_client.py HOST PORT.
"""
import re
import sys

import sqlalchemy as sa

from checks import check, done, oracle_sql

host, port = sys.argv[1], int(sys.argv[2])
# The dialect's defaults, as users get them: its hstore lookup runs in a
# SAVEPOINT (psycopg's TypeInfo.fetch inside the connection's transaction).
engine = sa.create_engine(f"postgresql+psycopg://test@{host}:{port}/test")
print(f"SQLAlchemy {sa.__version__}")

with engine.begin() as c:
    c.execute(sa.text("DROP MATERIALIZED VIEW IF EXISTS sa_stock"))
    c.execute(sa.text("DROP TABLE IF EXISTS sa_items"))

STOCK_Q = "SELECT name, sum(qty) AS qty FROM sa_items GROUP BY name"
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
    c.execute(sa.text(f"CREATE MATERIALIZED VIEW sa_stock AS {STOCK_Q}"))
    c.execute(items.insert(), [{"id": 1, "name": "bolt", "qty": 5}, {"id": 2, "name": "nut", "qty": 7}])
    c.execute(items.insert().values(id=3, name="bolt", qty=1))

with engine.begin() as c:
    c.execute(sa.text("REFRESH MATERIALIZED VIEW sa_stock"))
    rows = c.execute(sa.text("SELECT name, qty FROM sa_stock ORDER BY name")).all()
    check("materialized view after refresh", [tuple(r) for r in rows], [("bolt", 6), ("nut", 7)])
    got = c.execute(sa.select(items.c.name).where(items.c.id == sa.bindparam("i")), {"i": 2}).scalar_one()
    check("Core select with a bound parameter", got, "nut")

# Nested transactions (SAVEPOINT): rolled back before anything else in the
# transaction changed, then released.
with engine.begin() as c:
    with c.begin_nested() as sp:
        c.execute(items.insert().values(id=4, name="washer", qty=2))
        sp.rollback()
    with c.begin_nested():
        c.execute(items.insert().values(id=5, name="washer", qty=3))
with engine.connect() as c:
    got = c.execute(sa.select(items.c.id).where(items.c.name == "washer")).scalars().all()
    check("begin_nested: rolled back, then released", got, [5])

with engine.begin() as c:
    c.execute(items.update().where(items.c.name == "bolt").values(qty=items.c.qty * 10))
    c.execute(items.delete().where(items.c.id == 2))
    c.execute(sa.text("REFRESH MATERIALIZED VIEW sa_stock"))
    check("view equals its query after UPDATE/DELETE and refresh", c.execute(sa.text(oracle_sql("sa_stock", STOCK_Q))).scalar_one(), 0)
    rows = c.execute(sa.text("SELECT name, qty FROM sa_stock ORDER BY name")).all()
    check("view rows after UPDATE/DELETE", [tuple(r) for r in rows], [("bolt", 60), ("washer", 3)])

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
