#!/usr/bin/env bash
# Starts a fresh duckmv on a free loopback port with a temporary database,
# runs `COMMAND... HOST PORT`, stops the server, and exits with the command's
# status. Used by the client suites in scripts/test.
#
#   tests/clients/with-server.sh python3 tests/clients/psycopg_client.py
#
# The server binary is $DUCKMV_BIN, else target/release/duckmv under
# $CARGO_TARGET_DIR. Its log is printed when the command fails.
set -euo pipefail

bin="${DUCKMV_BIN:-${CARGO_TARGET_DIR:-target}/release/duckmv}"
if [ ! -x "$bin" ]; then
    echo "with-server: no server binary at $bin (cargo build --release --bin duckmv)" >&2
    exit 2
fi

dir="$(mktemp -d)"
log="$dir/server.log"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

NO_COLOR=1 RUST_LOG="${DUCKMV_TEST_LOG:-info}" \
    "$bin" --listen 127.0.0.1:0 --database "$dir/test.duckdb" 2>"$log" &
server_pid=$!

# Wait for `listening on 127.0.0.1:PORT` (at most 60 s).
port=""
for _ in $(seq 1 600); do
    port="$(sed -n 's/.*listening on [^0-9]*[0-9.]*:\([0-9][0-9]*\).*/\1/p' "$log" | head -n1)"
    [ -n "$port" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "with-server: duckmv exited before listening; log:" >&2
        cat "$log" >&2
        exit 2
    fi
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "with-server: duckmv did not listen within 60 s; log:" >&2
    cat "$log" >&2
    exit 2
fi

# A hung client fails the suite instead of hanging it.
status=0
timeout "${CLIENT_TIMEOUT:-300}" "$@" 127.0.0.1 "$port" || status=$?
if [ "$status" -eq 124 ]; then
    echo "with-server: '$*' timed out after ${CLIENT_TIMEOUT:-300} s" >&2
fi
if [ "$status" -ne 0 ]; then
    echo "with-server: '$*' failed with status $status; server log (last 40 lines):" >&2
    tail -n 40 "$log" >&2
fi
exit "$status"
