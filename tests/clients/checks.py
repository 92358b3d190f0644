"""Shared check helpers for the Python client scripts."""
import sys

_count = 0


def check(what, got, want):
    """Prints `ok: what` when got == want, else `FAIL:` and exits 1."""
    global _count
    if got != want:
        print(f"FAIL: {what}: got {got!r}, want {want!r}", flush=True)
        sys.exit(1)
    _count += 1
    print(f"ok: {what}", flush=True)


def oracle_sql(view, query):
    """SQL counting the rows where materialized view `view` and its defining
    `query`, run fresh, differ as bags (0 when the view is right)."""
    return (
        f"SELECT count(*) FROM ((SELECT * FROM {view} EXCEPT ALL ({query})) "
        f"UNION ALL (({query}) EXCEPT ALL SELECT * FROM {view})) AS diff"
    )


def done():
    print(f"all {_count} checks passed", flush=True)
