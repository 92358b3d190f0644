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


def done():
    print(f"all {_count} checks passed", flush=True)
