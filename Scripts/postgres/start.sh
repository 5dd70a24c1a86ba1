#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the PostgreSQL key store's tests,
# the demo and the benchmark, and prints its URL on standard output:
#
#   export OUTBOX_POSTGRES_URL=$(Scripts/postgres/start.sh)
#
# Idempotent: a server this script started (recorded in
# .build/postgres/state) that still answers is reused. Otherwise it installs
# Debian's `postgresql` if the server binaries are missing, makes a cluster
# in a new temporary directory (trust authentication, loopback only), and
# starts it on the first free port from 55432. The server refuses to run as
# root, so as root it runs as the `postgres` user. Scripts/postgres/stop.sh
# stops it and deletes the cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."

state_dir=.build/postgres
state=$state_dir/state

bin_dir() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

as_server() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# Reuse a running server this script started.
if [ -f "$state" ]; then
    # shellcheck disable=SC1090
    . "$state"
    if b=$(bin_dir) && "$b/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null \
        && as_server "$b/pg_ctl" -D "$data_dir/data" status >/dev/null 2>&1; then
        echo "postgres://postgres@127.0.0.1:$port/postgres"
        exit 0
    fi
fi

if ! b=$(bin_dir); then
    echo "PostgreSQL server binaries missing: installing Debian's postgresql" >&2
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    as_root apt-get update -qq >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    b=$(bin_dir) || { echo "error: no initdb under /usr/lib/postgresql/*/bin after installing postgresql" >&2; exit 1; }
fi

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=55432
while ! port_is_free "$port"; do
    port=$((port + 1))
    [ "$port" -lt 55532 ] || { echo "error: no free port in 55432...55531" >&2; exit 1; }
done

data_dir=$(mktemp -d /tmp/outbox-postgres.XXXXXX)
chmod 755 "$data_dir"
[ "$(id -u)" -eq 0 ] && chown postgres "$data_dir"
as_server "$b/initdb" -D "$data_dir/data" -A trust -U postgres >/dev/null
# fsync stays on: the store's tests are about what commits.
as_server "$b/pg_ctl" -D "$data_dir/data" -l "$data_dir/log" -w \
    -o "-p $port -k $data_dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >&2 \
    || { echo "error: PostgreSQL did not start; its log:" >&2; cat "$data_dir/log" >&2; exit 1; }

mkdir -p "$state_dir"
printf 'port=%s\ndata_dir=%s\n' "$port" "$data_dir" >"$state"
echo "postgres://postgres@127.0.0.1:$port/postgres"
